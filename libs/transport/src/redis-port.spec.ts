import Redis from 'ioredis';
import { startRedis, type RedisServer } from '../../../test/helpers/redis-server';
import { sleep, until } from '../../../test/helpers/poll';
import type { ExecuteBatchMessage, TransportMessage } from './messages';
import type { Delivery } from './port';
import { describePortConformance } from './port.conformance';
import { RedisPort } from './redis-port';
import { connectRedisPort } from './index';

let redis: RedisServer;
const prefix = `nereid-test-${process.pid}:`;

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  if (redis && !redis.external) await redis.stop();
});

describePortConformance('redis', () => ({ open: () => RedisPort.connect({ url: redis.url, prefix }), claimIdleMs: 500 }));

const batch = (batchId: string): ExecuteBatchMessage => ({ kind: 'execute-batch', batchId, key: 'k/1/0', instance: 0, slot: 0, requests: [] });

describe('redis port: Redis trouble', () => {
  it('answers UNAVAILABLE within a second while Redis is down, and recovers by itself when it returns', async () => {
    const own = await startRedis();
    if (own.external) throw new Error('this case needs a redis-server of its own (unset REDIS_URL)');
    const producer = await RedisPort.connect({ url: own.url });
    const worker = await RedisPort.connect({ url: own.url });
    try {
      const got: Delivery[] = [];
      await worker.consume('q', (d) => {
        got.push(d);
        // The ack of 'before' goes out with the port's next pipeline and may meet the kill below:
        // then it fails UNAVAILABLE, as it should (Redis restarts empty, so nothing is redelivered).
        void d.ack().catch(() => undefined);
      }, { claimIdleMs: 300 });
      const mail: TransportMessage[] = [];
      await worker.receive('gw', (m) => mail.push(m));
      const topic: TransportMessage[] = [];
      await worker.subscribe('t', (m) => topic.push(m));
      await producer.enqueue('q', batch('before'));
      await until('the first message', () => got.length === 1, 10_000);

      await own.stop(true);
      for (const send of [() => producer.enqueue('q', batch('down')), () => producer.send('gw', { kind: 'cancel', requestId: 'r' })]) {
        const started = Date.now();
        await expect(send()).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringMatching(/^the cluster's Redis is unavailable: /) });
        expect(Date.now() - started).toBeLessThan(1000);
      }

      await own.restart();
      // The port reconnects by itself: sends succeed again, and the consumer (whose group Redis lost),
      // the mailbox reader and the subscriber all resume.
      await until('sends work again', async () => producer.enqueue('q', batch('after')).then(() => true, () => false), 10_000);
      await until('the consumer resumes', () => got.some((d) => (d.message as ExecuteBatchMessage).batchId === 'after'), 10_000);
      await producer.send('gw', { kind: 'cancel', requestId: 'mail' });
      await until('the mailbox resumes', () => mail.length === 1, 10_000);
      await until('the subscriber resumes', async () => {
        await producer.publish('t', { kind: 'cancel', requestId: 'topic' });
        await sleep(50);
        return topic.length > 0;
      }, 10_000);
      expect(got.map((d) => (d.message as ExecuteBatchMessage).batchId)).not.toContain('down');
    } finally {
      await producer.close();
      await worker.close();
      await own.stop();
    }
  });

  it('connects to a Redis with a password given in the URL; a wrong one fails clearly', async () => {
    const own = await startRedis({ password: 's3cr3t' });
    try {
      const port = await connectRedisPort({ url: own.url });
      const got: TransportMessage[] = [];
      await port.receive('gw', (m) => got.push(m));
      await port.send('gw', { kind: 'cancel', requestId: 'r1' });
      await until('the message', () => got.length === 1, 10_000);
      await port.close();
      await expect(RedisPort.connect({ url: `redis://:wrong@127.0.0.1:${own.port}` })).rejects.toMatchObject({
        code: 'UNAVAILABLE', message: expect.stringMatching(/WRONGPASS|invalid username-password/),
      });
    } finally {
      await own.stop();
    }
  });

  it('fails each command that gets no answer UNAVAILABLE after the command timeout (one timer for them all), and goes on once Redis answers again', async () => {
    const own = await startRedis();
    if (own.external) throw new Error('this case needs a redis-server of its own (unset REDIS_URL)');
    const port = await RedisPort.connect({ url: own.url, commandTimeoutMs: 300 });
    const admin = new Redis(own.url);
    try {
      await port.enqueue('q', batch('before'));
      // Redis stops answering every client for 1.5 s (as a hung server would).
      await admin.call('CLIENT', 'PAUSE', '1500', 'ALL');
      const failedAfter = async (id: string): Promise<[number, unknown]> => {
        const at = Date.now();
        const e = await port.enqueue('q', batch(id)).then(() => undefined, (err: unknown) => err);
        return [Date.now() - at, e];
      };
      const first = failedAfter('hung-1');
      await sleep(200);
      const second = failedAfter('hung-2');
      for (const [ms, e] of [await first, await second]) {
        expect(e).toMatchObject({ code: 'UNAVAILABLE', message: "the cluster's Redis is unavailable: no answer within 300 ms" });
        expect(ms).toBeGreaterThanOrEqual(290);
        expect(ms).toBeLessThan(900);
      }
      await sleep(1500);
      await expect(port.enqueue('q', batch('after'))).resolves.toBeUndefined();
    } finally {
      await port.close();
      admin.disconnect();
      await own.stop();
    }
  });

  it('times commands out on time when the wall clock steps back while they wait (the deadlines are on a monotonic clock)', async () => {
    const own = await startRedis();
    if (own.external) throw new Error('this case needs a redis-server of its own (unset REDIS_URL)');
    const port = await RedisPort.connect({ url: own.url, commandTimeoutMs: 300 });
    const admin = new Redis(own.url);
    const wall = Date.now;
    try {
      await port.enqueue('q', batch('before'));
      await admin.call('CLIENT', 'PAUSE', '1500', 'ALL');
      const at = performance.now();
      const pending = port.enqueue('q', batch('hung')).then(() => undefined, (err: unknown) => err);
      // An NTP step of an hour back, once the command has been written (at the turn's end).
      await sleep(50);
      Date.now = () => wall() - 3_600_000;
      const e = await pending;
      expect(e).toMatchObject({ code: 'UNAVAILABLE', message: "the cluster's Redis is unavailable: no answer within 300 ms" });
      expect(performance.now() - at).toBeLessThan(900);
    } finally {
      Date.now = wall;
      await port.close();
      admin.disconnect();
      await own.stop();
    }
  });

  it('fails to connect to no Redis at all with UNAVAILABLE, quickly', async () => {
    const own = await startRedis();
    const url = own.url;
    await own.stop();
    const started = Date.now();
    await expect(RedisPort.connect({ url })).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(Date.now() - started).toBeLessThan(1500);
    // ioredis leaves the refused socket's 1 s connect timer running: let it end before jest does.
    await sleep(1100);
  });
});

describe('redis port: TLS', () => {
  it('connects with a rediss:// URL and the server CA, and refuses a server it cannot verify', async () => {
    const own = await startRedis({ tls: true });
    try {
      expect(own.url).toMatch(/^rediss:\/\//);
      const port = await RedisPort.connect({ url: own.url, tls: { ca: own.ca } });
      const got: Delivery[] = [];
      await port.consume('q', (d) => {
        got.push(d);
        void d.ack();
      });
      await port.enqueue('q', batch('over-tls'));
      await until('the message over TLS', () => got.length === 1, 10_000);
      await port.close();
      // Without the CA the self-signed certificate is refused.
      await expect(RedisPort.connect({ url: own.url })).rejects.toMatchObject({ code: 'UNAVAILABLE' });
      await sleep(1100); // ioredis's connect timer of the refused connection
    } finally {
      await own.stop();
    }
  });
});

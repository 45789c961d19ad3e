import Redis from 'ioredis';
import { startRedis, type RedisServer } from '../../../test/helpers/redis-server';
import { until } from '../../../test/helpers/poll';
import type { CancelMessage, ExecuteBatchMessage, TransportMessage } from './messages';
import type { Delivery } from './port';
import { RedisPort } from './redis-port';

/** The Redis port's outbox: a turn's commands go to Redis together, in order. */
let redis: RedisServer;
let probe: Redis;
const prefix = `nereid-outbox-${process.pid}:`;

beforeAll(async () => {
  redis = await startRedis();
  probe = new Redis(redis.url);
});
afterAll(async () => {
  probe?.disconnect();
  if (redis && !redis.external) await redis.stop();
});

/** How many times Redis has run `command` (INFO commandstats). */
async function calls(command: string): Promise<number> {
  const info = await probe.info('commandstats');
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
}

const batch = (batchId: string, bytes = 0): ExecuteBatchMessage => ({
  kind: 'execute-batch', batchId, key: 'k/1/0', instance: 0, slot: 0,
  requests: bytes === 0 ? [] : [{
    requestId: batchId, replyTo: 'gw', clientId: '', modelName: 'k', modelVersion: -1, parameters: {},
    inputs: [{ name: 'IN', datatype: 'UINT8', shape: [bytes], data: new Uint8Array(bytes).fill(7) }],
    correlationId: 0n, flags: { sequenceStart: false, sequenceEnd: false }, priority: 0, timeoutUs: 0,
  }],
});

describe('redis port: one pipeline per event-loop turn', () => {
  it("puts one turn's sends to a mailbox in one stream entry, delivered in order", async () => {
    const port = await RedisPort.connect({ url: redis.url, prefix });
    try {
      const ids = Array.from({ length: 50 }, (_, i) => `r${i}`);
      await Promise.all(ids.map((requestId) => port.send('turn', { kind: 'cancel', requestId })));
      const entries = await probe.xrange(`${prefix}m:turn`, '-', '+');
      expect(entries).toHaveLength(1);
      expect(entries[0][1]).toHaveLength(100); // 50 × (field, message)

      const got: TransportMessage[] = [];
      await port.receive('turn', (m) => got.push(m));
      await until('50 messages', () => got.length === 50, 10_000);
      expect(got.map((m) => (m as CancelMessage).requestId)).toEqual(ids);
      await until('the read entry deleted', async () => (await probe.xlen(`${prefix}m:turn`)) === 0, 10_000);
    } finally {
      await port.close();
    }
  });

  it("acks one turn's deliveries with one XACK and one XDEL", async () => {
    const [producer, consumer] = [await RedisPort.connect({ url: redis.url, prefix }), await RedisPort.connect({ url: redis.url, prefix })];
    try {
      const held: Delivery[] = [];
      await consumer.consume('acks', (d) => held.push(d), { prefetch: 32 });
      await Promise.all(Array.from({ length: 20 }, (_, i) => producer.enqueue('acks', batch(`b${i}`))));
      await until('20 deliveries', () => held.length === 20, 10_000);
      const [xack, xdel] = [await calls('xack'), await calls('xdel')];
      await Promise.all(held.map((d) => d.ack()));
      expect(await calls('xack')).toBe(xack + 1);
      expect(await calls('xdel')).toBe(xdel + 1);
      expect(await probe.xlen(`${prefix}q:acks`)).toBe(0);
      expect(await probe.xpending(`${prefix}q:acks`, 'nereid')).toEqual([0, null, null, null]);
    } finally {
      await producer.close();
      await consumer.close();
    }
  });

  it('keeps a large message in its place among the small ones of its turn', async () => {
    const [producer, consumer] = [await RedisPort.connect({ url: redis.url, prefix }), await RedisPort.connect({ url: redis.url, prefix })];
    try {
      const got: Delivery[] = [];
      await consumer.consume('mixed', (d) => {
        got.push(d);
        void d.ack();
      });
      const sizes = [0, 0, 1024 * 1024, 0, 512 * 1024, 0];
      await Promise.all(sizes.map((bytes, i) => producer.enqueue('mixed', batch(`b${i}`, bytes))));
      await until('6 deliveries', () => got.length === 6, 10_000);
      expect(got.map((d) => (d.message as ExecuteBatchMessage).batchId)).toEqual(sizes.map((_, i) => `b${i}`));
      const big = (got[2].message as ExecuteBatchMessage).requests[0].inputs[0].data as Uint8Array;
      expect(big.byteLength).toBe(1024 * 1024);
      expect(big.every((b) => b === 7)).toBe(true);
    } finally {
      await producer.close();
      await consumer.close();
    }
  });

  it("writes a handler's acks and sends ahead of its consumer's next read, on the consumer's connection", async () => {
    const [producer, consumer] = [await RedisPort.connect({ url: redis.url, prefix }), await RedisPort.connect({ url: redis.url, prefix })];
    const monitor = await probe.monitor();
    try {
      const seen: Array<{ command: string; key: string; client: string }> = [];
      monitor.on('monitor', (_time: string, args: string[], client: string) => {
        const key = args.map(String).find((a) => a.startsWith(prefix));
        if (key) seen.push({ command: String(args[0]).toLowerCase(), key, client });
      });
      const answers: string[] = [];
      await producer.receive('piggy-answers', (m) => answers.push((m as CancelMessage).requestId));
      await consumer.consume('piggy', (d) => {
        void consumer.send('piggy-answers', { kind: 'cancel', requestId: (d.message as ExecuteBatchMessage).batchId });
        void d.ack();
      });
      for (let i = 0; i < 5; i++) {
        await producer.enqueue('piggy', batch(`p${i}`));
        await until(`answer ${i}`, () => answers.length === i + 1, 10_000);
      }
      // The consumer's reads come from one client (its blocking connection); its acks and answers ride on the same one.
      const reads = new Set(seen.filter((c) => c.command === 'xreadgroup').map((c) => c.client));
      expect(reads.size).toBe(1);
      const [reader] = reads;
      const acks = seen.filter((c) => c.command === 'xack' && c.key === `${prefix}q:piggy`);
      const sends = seen.filter((c) => c.command === 'xadd' && c.key === `${prefix}m:piggy-answers`);
      expect(acks).toHaveLength(5);
      expect(sends).toHaveLength(5);
      expect([...acks, ...sends].every((c) => c.client === reader)).toBe(true);
    } finally {
      monitor.disconnect();
      await producer.close();
      await consumer.close();
    }
  });

  it("keeps a port's sends to a mailbox in order when they go on different connections", async () => {
    // A long command timeout: on a busy machine, megabytes queued ahead of a send may take over a second.
    const options = { url: redis.url, prefix, commandTimeoutMs: 10_000 };
    const [producer, consumer] = [await RedisPort.connect(options), await RedisPort.connect(options)];
    try {
      const sent: string[] = [];
      const got: string[] = [];
      const errors: unknown[] = [];
      await producer.receive('order', (m) => got.push((m as CancelMessage).requestId.replace(/\.+$/, '')));
      const say = (v: string, bytes = 0): void => {
        sent.push(v);
        // A cancel's id is any string: a long one makes a large message.
        consumer.send('order', { kind: 'cancel', requestId: bytes > 0 ? v.padEnd(bytes, '.') : v }).catch((e: unknown) => errors.push(e));
      };
      // Each delivery answers with a large message (written at once, on the port's command
      // connection: Redis takes a while to read it) and then small ones: at the turn's end (ahead of
      // the consumer's next read, on its connection, unless that would overtake the large one) and
      // a little later, so that the two paths interleave.
      await consumer.consume('order-in', (d) => {
        const id = (d.message as ExecuteBatchMessage).batchId;
        say(`${id}.large`, 400 * 1024);
        say(`${id}.a`);
        setImmediate(() => say(`${id}.b`));
        setTimeout(() => say(`${id}.c`), 0);
        void d.ack();
      });
      for (let round = 0; round < 10; round++) {
        await Promise.all(Array.from({ length: 4 }, (_, i) => producer.enqueue('order-in', batch(`r${round}-${i}`))));
        await new Promise((r) => setTimeout(r, round % 3));
      }
      await until('160 answers', () => got.length + errors.length >= 160, 30_000);
      expect(errors).toEqual([]);
      expect(got).toEqual(sent);
    } finally {
      await producer.close();
      await consumer.close();
    }
  });
});

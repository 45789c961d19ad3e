import { startRedis } from '../../../test/helpers/redis-server';
import { sleep, until } from '../../../test/helpers/poll';
import type { InferenceError } from '@nereid/protocol';
import type { ResponseMessage, TransportMessage } from './messages';
import { quietErrors } from './redis-connection';
import { RedisPort } from './redis-port';
import { ResponseRouter } from './response-router';

/**
 * A mailbox's `onLost`: when Redis dies (or restarts empty) what was sent to a mailbox and not read
 * may be gone, and whoever waits for answers there must not wait forever.
 */
describe('redis port: a mailbox receiver hears of a lost connection', () => {
  it('calls onLost once per outage, within a second, and receives again when Redis is back', async () => {
    const own = await startRedis();
    if (own.external) throw new Error('this case needs a redis-server of its own (unset REDIS_URL)');
    const port = await RedisPort.connect({ url: own.url });
    try {
      const lost: Array<{ at: number; error: InferenceError }> = [];
      const got: TransportMessage[] = [];
      await port.receive('gw', (m) => got.push(m), { onLost: (error) => lost.push({ at: Date.now(), error }) });
      await port.send('gw', { kind: 'cancel', requestId: 'before' });
      await until('the first message', () => got.length === 1, 10_000);
      expect(lost).toEqual([]);

      const killed = Date.now();
      await own.stop(true);
      await until('onLost', () => lost.length > 0, 1000);
      expect(lost[0].at - killed).toBeLessThan(1000);
      expect(lost[0].error).toMatchObject({ code: 'UNAVAILABLE', message: expect.stringMatching(/^the cluster's Redis is unavailable: the connection was lost while waiting for answers/) });
      // In plain words, not ioredis's option names.
      expect(lost[0].error.message).not.toMatch(/maxRetriesPerRequest|enableOfflineQueue/);
      await expect(port.send('gw', { kind: 'cancel', requestId: 'down' })).rejects.toMatchObject({
        code: 'UNAVAILABLE', message: "the cluster's Redis is unavailable: not connected (reconnecting)",
      });
      // The reader keeps retrying while Redis is down: still one call for this outage.
      await sleep(700);
      expect(lost).toHaveLength(1);

      await own.restart();
      await until('sends work again', async () => port.send('gw', { kind: 'cancel', requestId: 'after' }).then(() => true, () => false), 10_000);
      await until('the mailbox resumes', () => got.some((m) => m.kind === 'cancel' && m.requestId === 'after'), 10_000);
      expect(lost).toHaveLength(1);

      // A second outage is heard of again.
      await own.stop(true);
      await until('onLost of the second outage', () => lost.length === 2, 1000);
    } finally {
      await port.close();
      await own.stop();
      // ioredis leaves the connect timer of a refused reconnection running: let it end before jest does.
      await sleep(1100);
    }
  });

  it('tells its onError each trouble once per 5 s while Redis is down, in plain words, with how often it recurred', async () => {
    const own = await startRedis();
    if (own.external) throw new Error('this case needs a redis-server of its own (unset REDIS_URL)');
    const errors: string[] = [];
    const port = await RedisPort.connect({ url: own.url, onError: (e) => errors.push((e as Error).message) });
    try {
      // Readers retry ten times a second while Redis is down: a consumer, a mailbox reader.
      await port.consume('q', (d) => void d.ack(), { claimIdleMs: 300 });
      await port.receive('gw', () => undefined);
      await own.stop(true);
      await sleep(2000);
      // One line per distinct trouble (refused connections, a stream not writable...), not twenty a second.
      expect(errors.length).toBeGreaterThan(0);
      expect(errors.length).toBeLessThanOrEqual(6);
      expect(errors.join('\n')).not.toMatch(/enableOfflineQueue|maxRetriesPerRequest/);
      await own.restart();
    } finally {
      await port.close();
      await own.stop();
    }
  });

  it("fails a gateway's waiting requests UNAVAILABLE within a second when Redis dies under them", async () => {
    const own = await startRedis();
    if (own.external) throw new Error('this case needs a redis-server of its own (unset REDIS_URL)');
    const port = await RedisPort.connect({ url: own.url });
    const router = new ResponseRouter(port, 'g1');
    try {
      await router.start();
      const answers = new Map<string, ResponseMessage>();
      for (const id of ['r1', 'r2']) router.register(id, { onResponse: (m) => answers.set(id, m) });
      // r1 is answered before the outage; r2 waits for an answer Redis takes down with it.
      await port.send(router.mailbox, { kind: 'response', requestId: 'r1', final: true });
      await until('r1 answered', () => answers.has('r1'), 10_000);
      const killed = Date.now();
      await own.stop(true);
      await until('r2 failed', () => answers.has('r2'), 1000);
      expect(Date.now() - killed).toBeLessThan(1000);
      expect(answers.get('r1')).toEqual({ kind: 'response', requestId: 'r1', final: true });
      expect(answers.get('r2')).toMatchObject({
        kind: 'response', requestId: 'r2', final: true,
        error: { code: 'UNAVAILABLE', message: expect.stringMatching(/^the cluster's Redis is unavailable: /) },
      });
      expect(router.pending).toBe(0);
    } finally {
      await router.stop();
      await port.close();
      await own.stop();
      await sleep(1100); // as above
    }
  });
});

describe('quietErrors', () => {
  it('passes an error once per period, then says how often it recurred; ioredis words become plain ones', async () => {
    const told: unknown[] = [];
    const quiet = quietErrors((e) => told.push(e), 100);
    const refused = new Error('connect ECONNREFUSED 127.0.0.1:1');
    quiet(refused);
    quiet(new Error('connect ECONNREFUSED 127.0.0.1:1'));
    quiet(new Error('connect ECONNREFUSED 127.0.0.1:1'));
    quiet(new Error("Stream isn't writeable and enableOfflineQueue options is false"));
    await sleep(150);
    quiet(new Error('connect ECONNREFUSED 127.0.0.1:1'));
    expect(told[0]).toBe(refused); // the error itself when its words are kept
    expect(told.map((e) => (e as Error).message)).toEqual([
      'connect ECONNREFUSED 127.0.0.1:1',
      'not connected (reconnecting)',
      'connect ECONNREFUSED 127.0.0.1:1 (and 2 more times since)',
    ]);
  });
});

import Redis from 'ioredis';
import { startRedis, type RedisServer } from '../../../test/helpers/redis-server';
import { sleep, until } from '../../../test/helpers/poll';
import type { ExecuteBatchMessage } from './messages';
import type { Delivery } from './port';
import { RedisPort } from './redis-port';

/**
 * What the Redis port keeps in Redis for work queues must not pile up as processes come and go:
 * a worker's own queue lapses once its consumer stops (expireIdleMs), and consumers that died (or
 * read nothing) leave their queue's group once they hold nothing.
 */
let redis: RedisServer;
let conn: Redis;
const prefix = `nereid-upkeep-${process.pid}:`;

beforeAll(async () => {
  redis = await startRedis();
  conn = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await conn.connect();
});
afterAll(async () => {
  conn?.disconnect();
  if (redis && !redis.external) await redis.stop();
});

const batch = (batchId: string): ExecuteBatchMessage => ({ kind: 'execute-batch', batchId, key: 'k/1', instance: 0, slot: 0, requests: [] });

/** The consumer names of a queue's group. */
async function consumers(queue: string): Promise<string[]> {
  const info = (await conn.xinfo('CONSUMERS', `${prefix}q:${queue}`, 'nereid')) as Array<Array<string | number>>;
  return info.map((c) => String(c[c.indexOf('name') + 1])).sort();
}

describe('redis port: an ack and a claim of the consumer\'s own idle entries', () => {
  it('an entry acked while the consumer claims its own idle entries is not delivered again (at least once, not twice)', async () => {
    const port = await RedisPort.connect({ url: redis.url, prefix });
    const producer = await RedisPort.connect({ url: redis.url, prefix });
    try {
      const seen: string[] = [];
      const held: Delivery[] = [];
      // Claims every 25 ms: the consumer's own entries, held past 100 ms, come back in every round
      // (and are skipped while held); an ack lands between rounds issued before and after its XACK.
      await port.consume('own', (d) => {
        seen.push((d.message as ExecuteBatchMessage).batchId);
        held.push(d);
      }, { consumer: 'c', claimIdleMs: 100 });
      for (let i = 0; i < 20; i++) {
        await producer.enqueue('own', batch(`o${i}`));
        await until(`o${i} delivered`, () => seen.includes(`o${i}`), 10_000);
        await sleep(300);
        await held[held.length - 1].ack();
      }
      await sleep(400);
      // Before the fix about one run in twenty delivered an acked entry a second time.
      expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => `o${i}`));
    } finally {
      await port.close();
      await producer.close();
    }
  });
});

describe('redis port: work queues do not pile up in Redis', () => {
  it('a queue consumed with expireIdleMs stays while its consumer lives and lapses once it stops', async () => {
    const worker = await RedisPort.connect({ url: redis.url, prefix });
    const producer = await RedisPort.connect({ url: redis.url, prefix });
    const key = `${prefix}q:work:w1`;
    try {
      const got: Delivery[] = [];
      await worker.consume('work:w1', (d) => got.push(d), { consumer: 'w1', expireIdleMs: 400 });
      // Two messages: one acked, one still held when the worker dies.
      await producer.enqueue('work:w1', batch('b1'));
      await producer.enqueue('work:w1', batch('b2'));
      await until('both delivered', () => got.length === 2, 10_000);
      await got[0].ack();
      const ttl = await conn.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(400);
      // Renewed while the consumer lives: still there well past one expiry.
      await sleep(1200);
      expect(await conn.exists(key)).toBe(1);
      // The worker dies (its port closes without acking): the queue, with what it held, lapses.
      await worker.close();
      await until('the queue lapses', async () => (await conn.exists(key)) === 0, 2000);
    } finally {
      await worker.close();
      await producer.close();
    }
  });

  it('a queue consumed without expireIdleMs is kept', async () => {
    const port = await RedisPort.connect({ url: redis.url, prefix });
    try {
      await port.consume('requests:m/1', () => undefined, { consumer: 's1', claimIdleMs: 200 });
      await port.enqueue('requests:m/1', batch('r1'));
      await sleep(500);
      expect(await conn.pttl(`${prefix}q:requests:m/1`)).toBe(-1);
    } finally {
      await port.close();
    }
  });

  it('a dead consumer leaves its queue group once every message it held was claimed, not before', async () => {
    const dead = await RedisPort.connect({ url: redis.url, prefix });
    const producer = await RedisPort.connect({ url: redis.url, prefix });
    const live = await RedisPort.connect({ url: redis.url, prefix });
    const id = (d: Delivery): string => (d.message as ExecuteBatchMessage).batchId;
    try {
      const taken: Delivery[] = [];
      await dead.consume('jobs', (d) => taken.push(d), { consumer: 'dead', claimIdleMs: 300, prefetch: 2 });
      await producer.enqueue('jobs', batch('j1'));
      await producer.enqueue('jobs', batch('j2'));
      await until('the first consumer takes j1 and j2', () => taken.length === 2, 10_000);
      await dead.close(); // died holding both, unacked

      // The live consumer has room for one message at a time: it claims one, the dead one still holds the other.
      const claimed: Delivery[] = [];
      let ackAll = false;
      await live.consume('jobs', (d) => {
        claimed.push(d);
        if (ackAll) void d.ack();
      }, { consumer: 'live', claimIdleMs: 300, prefetch: 1 });
      await until('one message claimed', () => claimed.length === 1, 10_000);
      await sleep(1000); // well past 2 x the claim time
      expect(await consumers('jobs')).toEqual(['dead', 'live']);

      // Done with it: the other is claimed, and the dead consumer, holding nothing now, is forgotten.
      expect(claimed[0].redelivered).toBe(true);
      // From now on every delivery is acked. (An entry acked while a claim of the consumer's own
      // idle entries is under way may come back once more: at least once.)
      ackAll = true;
      await claimed[0].ack();
      await until('the second message claimed', () => claimed.some((d) => id(d) !== id(claimed[0])), 10_000);
      expect([...new Set(claimed.map(id))].sort()).toEqual(['j1', 'j2']);
      await until('the dead consumer is forgotten', async () => (await consumers('jobs')).join() === 'live', 5000);
    } finally {
      for (const p of [dead, producer, live]) await p.close();
    }
  });
});

import Redis from 'ioredis';
import { sleep, until } from '../../../test/helpers/poll';
import { startRedis, type RedisServer } from '../../../test/helpers/redis-server';
import { Lease, type LeaseStore } from './model-lease';
import { RedisLeaseStore } from './redis-leases';
import { RedisSequenceRegistry, registryId } from './sequence-registry';

let redis: RedisServer;
let conn: Redis;
let store: RedisLeaseStore;
let test = 0;
/** A lease name of its own for each test. */
let name: string;

beforeAll(async () => {
  redis = await startRedis();
  conn = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  store = new RedisLeaseStore(conn, `lease-spec-${process.pid}:`);
});
beforeEach(() => {
  name = `model-${++test}/1`;
});
afterAll(async () => {
  conn?.disconnect();
  if (redis && !redis.external) await redis.stop();
});

/** A lease's events, recorded. */
function recorder(): { events: string[]; fences: number[]; on: ConstructorParameters<typeof Lease>[3] } {
  const events: string[] = [];
  const fences: number[] = [];
  return {
    events,
    fences,
    on: {
      acquired: (f) => {
        events.push('acquired');
        fences.push(f);
      },
      lost: (why) => events.push(`lost: ${why}`),
      fenced: (f) => {
        events.push('fenced');
        fences.push(f);
      },
    },
  };
}

describe('RedisLeaseStore (a real redis-server)', () => {
  it('gives a free lease to one owner at a time, each acquisition a higher fence', async () => {
    const a = await store.acquire(name, 'A', 300);
    expect(a).toBeGreaterThan(0);
    expect(await store.acquire(name, 'B', 300)).toBeUndefined();
    // A renews: still A's, same fence; B still cannot take it.
    expect(await store.renew(name, 'A', a!, 300)).toBe(a);
    await sleep(150);
    expect(await store.renew(name, 'A', a!, 300)).toBe(a);
    await sleep(200);
    expect(await store.acquire(name, 'B', 300)).toBeUndefined();
    // A stops renewing (dies): after the TTL, B takes it with a higher fence, and A's renewal fails.
    await sleep(350);
    const b = await store.acquire(name, 'B', 300);
    expect(b).toBeGreaterThan(a!);
    expect(await store.renew(name, 'A', a!, 300)).toBeUndefined();
    // A released lease is free at once.
    await store.release(name, 'A', a!); // not A's: nothing happens
    expect(await store.acquire(name, 'C', 300)).toBeUndefined();
    await store.release(name, 'B', b!);
    expect(await store.acquire(name, 'C', 300)).toBeGreaterThan(b!);
  });

  it('keeps fences growing when Redis loses everything (a restart without persistence), and lets the holder keep its lease', async () => {
    const a = (await store.acquire(name, 'A', 5000))!;
    await conn.flushall();
    // The holder's renewal finds nothing and no newer fence: it holds the lease again, with a new, higher fence.
    const again = await store.renew(name, 'A', a, 5000);
    expect(again).toBeGreaterThan(a);
    expect(await store.acquire(name, 'B', 5000)).toBeUndefined();
    // A holder that died with the old Redis: the next one still gets a higher fence than any before.
    await conn.flushall();
    expect(await store.acquire(name, 'B', 5000)).toBeGreaterThan(again!);
  });

  it("a holder whose fence is ahead of Redis's clock still renews to a higher fence after Redis lost everything", async () => {
    // A fence ahead of the clock (the counter had been bumped past it): the clock alone cannot beat
    // it after the flush, and a renewal in the same clock tick once returned the old fence.
    const ahead = 9e15;
    await conn.set(`lease-spec-${process.pid}:fence:${name}`, String(ahead));
    const a = (await store.acquire(name, 'A', 5000))!;
    expect(a).toBe(ahead + 1);
    await conn.flushall();
    expect(await store.renew(name, 'A', a, 5000)).toBeGreaterThan(a);
  });

  it('a lapsed holder does not get its lease back once another took it, even after that one let it expire', async () => {
    const a = (await store.acquire(name, 'A', 200))!;
    await sleep(250);
    const b = (await store.acquire(name, 'B', 200))!;
    await sleep(250);
    // The lease is free again, but a fence newer than A's was handed out: A lost it.
    expect(await store.renew(name, 'A', a, 200)).toBeUndefined();
    expect(await store.acquire(name, 'A', 200)).toBeGreaterThan(b);
  });
});

describe('Lease (the holder side)', () => {
  it('one of two competitors holds it; the other takes it over within a TTL and a tick of the holder stopping', async () => {
    const ra = recorder();
    const rb = recorder();
    const a = new Lease(store, name, 'A', ra.on, 400, 100);
    const b = new Lease(store, name, 'B', rb.on, 400, 100);
    await a.start();
    await b.start();
    try {
      await sleep(600); // several renewals
      expect(ra.events).toEqual(['acquired']);
      expect(rb.events).toEqual([]);
      expect(a.heldFence).toBe(ra.fences[0]);
      expect(b.heldFence).toBeUndefined();
      // A dies (its timer stops; nothing released): B takes over after the TTL.
      const died = Date.now();
      (a as unknown as { stopped: boolean }).stopped = true;
      await until('B holds the lease', () => b.heldFence !== undefined, 3000);
      const took = Date.now() - died;
      expect(took).toBeGreaterThanOrEqual(300);
      expect(took).toBeLessThan(1000);
      expect(rb.fences[0]).toBeGreaterThan(ra.fences[0]);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it('a holder that learns the lease is someone else\'s reports it lost at once', async () => {
    const ra = recorder();
    const a = new Lease(store, name, 'A', ra.on, 5000, 60_000);
    await a.start();
    try {
      expect(a.heldFence).toBeDefined();
      // Someone else holds it now (as after A's lease expired and another took it).
      await conn.set(`lease-spec-${process.pid}:lease:${name}`, 'B#99999999999999', 'PX', 5000);
      await conn.set(`lease-spec-${process.pid}:fence:${name}`, '99999999999999');
      await a.tick();
      expect(ra.events).toEqual(['acquired', 'lost: held by another scheduler']);
      expect(a.heldFence).toBeUndefined();
    } finally {
      await a.stop();
    }
  });

  it('a holder that cannot reach the store stops trusting its lease before it can expire in Redis', async () => {
    let cut = false;
    const flaky: LeaseStore = {
      acquire: (...args) => (cut ? Promise.reject(new Error('Redis is gone')) : store.acquire(...args)),
      renew: (...args) => (cut ? Promise.reject(new Error('Redis is gone')) : store.renew(...args)),
      release: (...args) => store.release(...args),
    };
    const ra = recorder();
    const a = new Lease(flaky, name, 'A', ra.on, 500, 100);
    await a.start();
    try {
      expect(a.heldFence).toBeDefined();
      cut = true;
      const at = Date.now();
      await until('A stops trusting the lease', () => a.heldFence === undefined, 2000);
      // 80 % of the TTL after its last renewal (at most one tick before the cut).
      expect(Date.now() - at).toBeLessThanOrEqual(500);
      await until('A reports it lost', () => ra.events.length === 2, 2000);
      expect(ra.events[1]).toMatch(/^lost: (not renewed within 400 ms|lease store: Redis is gone)$/);
      // The store is back: A takes the lease again (once Redis let it expire), with a new fence.
      cut = false;
      await until('A holds it again', () => a.heldFence !== undefined, 3000);
      expect(ra.fences[1]).toBeGreaterThan(ra.fences[0]);
    } finally {
      await a.stop();
    }
  });
});

describe('RedisSequenceRegistry', () => {
  it('hands the sequences left by earlier holders to the one taking over, once', async () => {
    const reg = new RedisSequenceRegistry(conn, `lease-spec-${process.pid}:`);
    await reg.add(name, [registryId(7n), registryId('7'), registryId(8n)], 'scheduler-a');
    await reg.remove(name, [registryId(8n)]);
    expect(await reg.takeOver(name)).toEqual(new Map([['n7', 'scheduler-a'], ['s7', 'scheduler-a']]));
    expect(await reg.takeOver(name)).toEqual(new Map());
  });
});

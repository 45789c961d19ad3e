import Redis from 'ioredis';
import type { ClusterModelEntry } from '@nereid/worker';
import { startRedis, type RedisServer } from '../../../test/helpers/redis-server';
import { CLUSTER_ENTRY_FORGET_MS, RedisClusterModels } from './roles-cluster';

let redis: RedisServer;
let conn: Redis;
const prefix = `nereid-roles-cluster-${process.pid}:`;

beforeAll(async () => {
  redis = await startRedis();
  conn = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await conn.connect();
});
afterAll(async () => {
  conn?.disconnect();
  if (redis && !redis.external) await redis.stop();
});

const entry = (workerId: string, at: number): ClusterModelEntry => ({
  name: 'simple', version: 1, workerId, config: { name: 'simple' }, instances: 1, depth: 1, at,
});

describe('RedisClusterModels: the model table does not keep the entries of workers long gone', () => {
  it('lists entries re-published within CLUSTER_ENTRY_FORGET_MS and removes the older ones from the table', async () => {
    const table = await RedisClusterModels.connect(redis.url, prefix);
    try {
      const now = Date.now();
      await table.publish(entry('worker-live', now));
      // Missed its heartbeats (gone for the schedulers) but not yet forgotten.
      await table.publish(entry('worker-lost', now - 10_000));
      // Killed, or scaled away, long ago.
      await table.publish(entry('worker-dead', now - CLUSTER_ENTRY_FORGET_MS - 1));
      const listed = await table.list(now);
      expect(listed.map((e) => e.workerId).sort()).toEqual(['worker-live', 'worker-lost']);
      expect((await conn.hkeys(`${prefix}models`)).sort()).toEqual(['simple/1@worker-live', 'simple/1@worker-lost']);
      // A worker that comes back publishes its entry again.
      await table.publish(entry('worker-dead', Date.now()));
      expect((await table.list()).map((e) => e.workerId).sort()).toEqual(['worker-dead', 'worker-live', 'worker-lost']);
    } finally {
      await table.close();
    }
  });
});

import type Redis from 'ioredis';
import type { ClusterModelEntry, ClusterModels } from '@nereid/worker';

/**
 * The cluster's model table in Redis (distributed mode): one hash, a field per
 * `<name>/<version>@<worker>`, the entry as JSON. Workers write it when a version is READY on them
 * and remove it when they stop; gateways and schedulers read it (at start and while they wait).
 */
export class RedisClusterModels implements ClusterModels {
  private constructor(
    private readonly redis: Redis,
    private readonly key: string,
  ) {}

  static async connect(url: string, prefix = 'nereid:'): Promise<RedisClusterModels> {
    const { default: IORedis } = await import('ioredis');
    const redis = new IORedis(url, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 1000, enableOfflineQueue: false });
    redis.on('error', () => undefined);
    await redis.connect();
    return new RedisClusterModels(redis, `${prefix}models`);
  }

  private static field(name: string, version: number, workerId: string): string {
    return `${name}/${version}@${workerId}`;
  }

  async publish(entry: ClusterModelEntry): Promise<void> {
    await this.redis.hset(this.key, RedisClusterModels.field(entry.name, entry.version, entry.workerId), JSON.stringify(entry));
  }

  async withdraw(name: string, version: number, workerId: string): Promise<void> {
    await this.redis.hdel(this.key, RedisClusterModels.field(name, version, workerId));
  }

  async list(): Promise<ClusterModelEntry[]> {
    const all = await this.redis.hgetall(this.key);
    return Object.values(all).map((v) => JSON.parse(v) as ClusterModelEntry);
  }

  /** One PING round trip to Redis, in ms (the `nereid_redis_round_trip_ms` metric). */
  async ping(): Promise<number> {
    const start = performance.now();
    await this.redis.ping();
    return performance.now() - start;
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}

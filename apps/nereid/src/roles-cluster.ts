import type Redis from 'ioredis';
import type { ClusterModelEntry, ClusterModels } from '@nereid/worker';

/** An entry of the model table not re-published for this long is removed (its worker is long gone). */
export const CLUSTER_ENTRY_FORGET_MS = 60_000;

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
    // Reconnects as the message port does (every 0.5 s at most): ioredis's default waits up to 2 s
    // between tries, so a table reader could come back that much later than the rest after an outage.
    const redis = new IORedis(url, {
      lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 1000, enableOfflineQueue: false,
      retryStrategy: (times: number) => Math.min(50 * times, 500),
    });
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

  /**
   * Every entry, less those not re-published for CLUSTER_ENTRY_FORGET_MS: their workers are long
   * gone (killed, or scaled away, each under a new id), and the reader removes them from the table,
   * which would otherwise keep one per model for every worker that ever died.
   */
  async list(now = Date.now()): Promise<ClusterModelEntry[]> {
    const all = await this.redis.hgetall(this.key);
    const entries: ClusterModelEntry[] = [];
    const forgotten: string[] = [];
    for (const [field, value] of Object.entries(all)) {
      const entry = JSON.parse(value) as ClusterModelEntry;
      if (now - entry.at > CLUSTER_ENTRY_FORGET_MS) forgotten.push(field);
      else entries.push(entry);
    }
    // A worker that comes back after that long publishes its entry again at its next heartbeat.
    if (forgotten.length > 0) await this.redis.hdel(this.key, ...forgotten).catch(() => undefined);
    return entries;
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

import type { SchedulerState } from './scheduler-agent';
import { RedisLeaseStore } from './redis-leases';
import { RedisSequenceRegistry } from './sequence-registry';

/**
 * A scheduler's leases and sequence registry in the cluster's Redis, on a connection of their own
 * whose commands fail after a second rather than wait (a lease holder that cannot renew stops by
 * its own clock; see model-lease.ts).
 */
export async function connectSchedulerState(url: string, prefix = 'nereid:'): Promise<SchedulerState & { close(): void }> {
  const { default: IORedis } = await import('ioredis');
  const redis = new IORedis(url, {
    lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000, commandTimeout: 1000, enableOfflineQueue: false,
    retryStrategy: (times: number) => Math.min(50 * times, 500),
  });
  redis.on('error', () => undefined);
  await redis.connect();
  return {
    leases: new RedisLeaseStore(redis, prefix),
    sequences: new RedisSequenceRegistry(redis, prefix),
    close: () => redis.disconnect(),
  };
}

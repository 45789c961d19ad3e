import { Histogram, type Registry } from 'prom-client';
import { SnapshotGauge } from './snapshot-family';

/** Bounds of the Redis round-trip histogram, in ms (loopback is ~0.05–0.2 ms; a busy or remote Redis more). */
export const REDIS_ROUND_TRIP_BUCKETS_MS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 1000];

/** What the cluster's families read at each scrape (distributed mode). */
export interface ClusterMetricsSource {
  /** Live workers (heard from lately); absent on a worker, which does not follow the others. */
  liveWorkers?(): number;
  /** Each live worker's load (batches running or waiting on its instances), from its last heartbeat. */
  workerLoads?(): Array<{ worker: string; load: number }>;
}

/**
 * Nereid's families of the distributed mode, on each role's metrics port:
 * `nereid_redis_round_trip_ms` (every role: a PING to Redis, timed), and on gateways and schedulers
 * `nereid_cluster_workers` and `nereid_cluster_worker_load` (label `worker`).
 */
export class ClusterMetrics {
  private readonly roundTrip: Histogram;

  constructor(registry: Registry, source: ClusterMetricsSource) {
    this.roundTrip = new Histogram({
      name: 'nereid_redis_round_trip_ms',
      help: 'Round-trip time of a PING to the Redis server of the cluster, ms',
      buckets: REDIS_ROUND_TRIP_BUCKETS_MS,
      registers: [registry],
    });
    const { liveWorkers, workerLoads } = source;
    if (liveWorkers) {
      new SnapshotGauge('nereid_cluster_workers', 'Live workers of the cluster (a heartbeat heard within the last 3.5 s)', registry, () => [
        { labels: {}, value: liveWorkers() },
      ]);
    }
    if (workerLoads) {
      new SnapshotGauge('nereid_cluster_worker_load', "Batches running or waiting on a live worker's instances, from its last heartbeat", registry, () =>
        workerLoads().map((w) => ({ labels: { worker: w.worker }, value: w.load })),
      );
    }
  }

  /** One timed round trip to Redis. */
  observeRedisRoundTrip(ms: number): void {
    this.roundTrip.observe(ms);
  }
}

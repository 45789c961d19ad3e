import { Registry } from 'prom-client';
import { ClusterMetrics } from './cluster-metrics';

describe('ClusterMetrics', () => {
  it("exports the Redis round trip, the live worker count and each worker's load as they are at the scrape", async () => {
    const registry = new Registry();
    let loads = [{ worker: 'worker-a', load: 3 }, { worker: 'worker-b', load: 0 }];
    const metrics = new ClusterMetrics(registry, { liveWorkers: () => loads.length, workerLoads: () => loads });
    metrics.observeRedisRoundTrip(0.2);
    metrics.observeRedisRoundTrip(3);
    let text = await registry.metrics();
    expect(text).toContain('# TYPE nereid_redis_round_trip_ms histogram');
    expect(text).toMatch(/^nereid_redis_round_trip_ms_bucket\{le="0\.25"\} 1$/m);
    expect(text).toMatch(/^nereid_redis_round_trip_ms_bucket\{le="5"\} 2$/m);
    expect(text).toMatch(/^nereid_redis_round_trip_ms_count 2$/m);
    expect(text).toMatch(/^nereid_redis_round_trip_ms_sum 3\.2$/m);
    expect(text).toMatch(/^nereid_cluster_workers 2$/m);
    expect(text).toMatch(/^nereid_cluster_worker_load\{worker="worker-a"\} 3$/m);
    expect(text).toMatch(/^nereid_cluster_worker_load\{worker="worker-b"\} 0$/m);
    // A worker that is gone leaves the exposition.
    loads = [{ worker: 'worker-b', load: 1 }];
    text = await registry.metrics();
    expect(text).toMatch(/^nereid_cluster_workers 1$/m);
    expect(text).not.toContain('worker-a');
  });

  it('a worker exports the round trip only (it does not follow the other workers)', async () => {
    const registry = new Registry();
    new ClusterMetrics(registry, {});
    const text = await registry.metrics();
    expect(text).toContain('nereid_redis_round_trip_ms_count 0');
    expect(text).not.toContain('nereid_cluster_workers');
    expect(text).not.toContain('nereid_cluster_worker_load');
  });
});

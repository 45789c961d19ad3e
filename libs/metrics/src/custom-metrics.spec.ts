import { Registry } from 'prom-client';
import { CustomMetrics } from './custom-metrics';

describe('CustomMetrics (python models’ MetricFamily / Metric)', () => {
  let registry: Registry;
  let custom: CustomMetrics;
  const a = {};
  const b = {};
  beforeEach(() => {
    registry = new Registry();
    custom = new CustomMetrics(registry, (name) => name === 'nv_inference_count');
  });

  it('exports counters and gauges with labels in name order, values as set', async () => {
    custom.openFamily(a, 'latency_ns', 'Cumulative time', 'COUNTER');
    custom.openMetric(a, 'latency_ns', { version: '1', model: 'm' });
    custom.update('latency_ns', { model: 'm', version: '1' }, 'increment', 1500);
    custom.update('latency_ns', { model: 'm', version: '1' }, 'increment', 0.5);
    custom.openFamily(a, 'temperature', 'A gauge', 'GAUGE');
    custom.openMetric(a, 'temperature', {});
    custom.update('temperature', {}, 'set', 3);
    custom.update('temperature', {}, 'increment', -5);
    expect(await registry.metrics()).toBe(
      [
        '# HELP latency_ns Cumulative time',
        '# TYPE latency_ns counter',
        'latency_ns{model="m",version="1"} 1500.5',
        '',
        '# HELP temperature A gauge',
        '# TYPE temperature gauge',
        'temperature -2',
        '',
      ].join('\n'),
    );
    expect(custom.value('latency_ns', { version: '1', model: 'm' })).toBe(1500.5);
  });

  it('exports a histogram with its own buckets, cumulative, +Inf, sum and count', async () => {
    custom.openFamily(a, 'sizes', 'Sizes', 'HISTOGRAM');
    custom.openMetric(a, 'sizes', { m: 'x' }, [1, 10]);
    for (const v of [0.5, 1, 2, 50]) custom.update('sizes', { m: 'x' }, 'observe', v);
    expect(await registry.metrics()).toContain(
      [
        '# TYPE sizes histogram',
        'sizes_bucket{m="x",le="1"} 2',
        'sizes_bucket{m="x",le="10"} 3',
        'sizes_bucket{m="x",le="+Inf"} 4',
        'sizes_sum{m="x"} 53.5',
        'sizes_count{m="x"} 4',
      ].join('\n'),
    );
  });

  it("refuses what Triton refuses, in Triton's words", () => {
    custom.openFamily(a, 'c', 'c', 'COUNTER');
    custom.openMetric(a, 'c', {});
    expect(() => custom.update('c', {}, 'increment', -1)).toThrow('TRITONSERVER_METRIC_KIND_COUNTER can only be incremented monotonically by non-negative values.');
    expect(() => custom.update('c', {}, 'set', 1)).toThrow('TRITONSERVER_METRIC_KIND_COUNTER does not support Set');
    expect(() => custom.update('c', {}, 'observe', 1)).toThrow('TRITONSERVER_METRIC_KIND_COUNTER does not support Observe');
    custom.openFamily(a, 'h', 'h', 'HISTOGRAM');
    custom.openMetric(a, 'h', {}, [1]);
    expect(() => custom.update('h', {}, 'increment', 1)).toThrow('TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Increment');
    expect(() => custom.value('h', {})).toThrow('TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Value');
    expect(() => custom.openFamily(b, 'c', 'c', 'GAUGE')).toThrow("metric family 'c' already exists with a different kind (TRITONSERVER_METRIC_KIND_COUNTER)");
    expect(() => custom.openFamily(b, 'nv_inference_count', 'mine', 'COUNTER')).toThrow("metric family name 'nv_inference_count' is used by the server's own metrics");
    expect(() => custom.openFamily(b, 'bad name', 'x', 'COUNTER')).toThrow("invalid metric family name 'bad name'");
    expect(() => custom.openMetric(b, 'h', { other: 'labels' }, [2, 1])).toThrow('histogram buckets must be finite and increasing');
  });

  it('shares a family and a metric between owners; removes each once its last holder lets go', async () => {
    custom.openFamily(a, 'shared', 'first description', 'COUNTER');
    custom.openFamily(b, 'shared', 'second description', 'COUNTER');
    custom.openMetric(a, 'shared', { k: 'v' });
    custom.openMetric(b, 'shared', { k: 'v' });
    custom.update('shared', { k: 'v' }, 'increment', 2);
    custom.update('shared', { k: 'v' }, 'increment', 3);
    expect(await registry.metrics()).toContain('# HELP shared first description\n# TYPE shared counter\nshared{k="v"} 5');
    custom.release(a);
    expect(custom.value('shared', { k: 'v' })).toBe(5);
    // A delete for something the owner never held changes nothing.
    custom.closeFamily(a, 'shared');
    expect(await registry.metrics()).toContain('shared{k="v"} 5');
    custom.closeMetric(b, 'shared', { k: 'v' });
    expect(await registry.metrics()).not.toContain('shared{');
    custom.closeFamily(b, 'shared');
    expect(await registry.metrics()).toBe('\n');
    expect(() => custom.value('shared', { k: 'v' })).toThrow("metric family 'shared' does not exist (it has been deleted)");
  });

  it('counts stub restarts per model version, until the version loads anew', () => {
    custom.stubRestarted('m', 1);
    custom.stubRestarted('m', 1);
    custom.stubRestarted('n', 2);
    expect([custom.stubRestarts('m', '1'), custom.stubRestarts('n', '2'), custom.stubRestarts('m', '2')]).toEqual([2, 1, 0]);
    custom.clearStubRestarts('m', '1');
    expect([custom.stubRestarts('m', '1'), custom.stubRestarts('n', '2')]).toEqual([0, 1]);
  });
});

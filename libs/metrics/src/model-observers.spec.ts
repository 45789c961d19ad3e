import { Registry } from 'prom-client';
import { parseMetricsConfig } from './metrics-config';
import { histogramBuckets, ModelMetricsError } from './model-metrics';
import { ModelObservers } from './model-observers';
import type { ModelCounts, ServedVersion, StatsObserver } from './stats-port';

const counts = {} as ModelCounts;
/** Version 1 of `model` as the core serves it: READY, with the observer made when it loaded. */
const served = (model: string, observer?: StatsObserver, tags: Record<string, string> = {}): ServedVersion => ({
  model,
  version: '1',
  key: `${model}/1`,
  tags,
  counts,
  loadSecs: 0,
  observer,
});
const control = (family: string, buckets?: unknown[]) => ({ metric_identifier: { family }, ...(buckets && { histogram_options: { buckets } }) });

describe('histogramBuckets (model_metrics)', () => {
  it("reads each family's buckets, a later entry winning", () => {
    const warn = jest.fn();
    const m = { metric_control: [control('nv_inference_first_response_histogram_ms', [1, 5]), control('nereid_inference_batch_size', [2, 4]), control('nv_inference_first_response_histogram_ms', [1, 2.5, 10])] };
    expect([...histogramBuckets('m', m, warn)]).toEqual([
      ['nv_inference_first_response_histogram_ms', [1, 2.5, 10]],
      ['nereid_inference_batch_size', [2, 4]],
    ]);
    expect(warn).not.toHaveBeenCalled();
    expect(histogramBuckets('m', undefined, warn).size).toBe(0);
  });

  it("ignores an unknown or non-histogram family with Triton's warning", () => {
    const warn = jest.fn();
    const m = { metric_control: [control('nv_inference_count', [1]), control('no_such_family', [1]), control('nereid_inference_queue_depth', [1])] };
    expect(histogramBuckets('m', m, warn).size).toBe(0);
    expect(warn.mock.calls.map((c) => c[0])).toEqual([
      "Metric family 'nv_inference_count' in 'metric_identifier' is not a customizable metric in Triton core.",
      "Metric family 'no_such_family' in 'metric_identifier' is not a customizable metric in Triton core.",
      "Metric family 'nereid_inference_queue_depth' in 'metric_identifier' is not a customizable metric in Triton core.",
    ]);
  });

  it('gives a family without histogram_options no bucket but +Inf, as Triton does', () => {
    expect(histogramBuckets('m', { metric_control: [control('nereid_inference_request_duration_ms')] }, jest.fn()).get('nereid_inference_request_duration_ms')).toEqual([]);
  });

  it('refuses buckets out of order, repeated or not numbers, naming the model and family', () => {
    for (const buckets of [[5, 1], [1, 1], [1, 'x'], [1, Number.POSITIVE_INFINITY]]) {
      expect(() => histogramBuckets('m', { metric_control: [control('nereid_inference_batch_size', buckets)] }, jest.fn())).toThrow(ModelMetricsError);
    }
    expect(() => histogramBuckets('m', { metric_control: [control('nereid_inference_batch_size', [5, 1])] }, jest.fn())).toThrow(
      "model_metrics of 'm': the buckets of 'nereid_inference_batch_size' must be finite numbers in strictly increasing order, got [5, 1]",
    );
  });
});

describe('ModelObservers', () => {
  let registry: Registry;
  let versions: ServedVersion[];
  let observers: ModelObservers;
  beforeEach(() => {
    registry = new Registry();
    versions = [];
    observers = new ModelObservers(registry, parseMetricsConfig(['histogram_latencies=true', 'summary_latencies=true', 'summary_quantiles=0.5:0.05']), () => versions);
  });
  const lines = async (prefix: string) => (await registry.metrics()).split('\n').filter((l) => l.startsWith(prefix));

  it("uses a model's own buckets for that model only", async () => {
    const a = observers.observerFor('a', 1, { metric_control: [control('nv_inference_first_response_histogram_ms', [1, 2.5, 10])] }, undefined, true)!;
    const b = observers.observerFor('b', 1, undefined, undefined, true)!;
    versions = [served('a', a), served('b', b)];
    a.firstResponse(2e6);
    b.firstResponse(2e6);
    expect(await lines('nv_inference_first_response_histogram_ms_bucket')).toEqual([
      'nv_inference_first_response_histogram_ms_bucket{model="a",version="1",le="1"} 0',
      'nv_inference_first_response_histogram_ms_bucket{model="a",version="1",le="2.5"} 1',
      'nv_inference_first_response_histogram_ms_bucket{model="a",version="1",le="10"} 1',
      'nv_inference_first_response_histogram_ms_bucket{model="a",version="1",le="+Inf"} 1',
      'nv_inference_first_response_histogram_ms_bucket{model="b",version="1",le="100"} 1',
      'nv_inference_first_response_histogram_ms_bucket{model="b",version="1",le="500"} 1',
      'nv_inference_first_response_histogram_ms_bucket{model="b",version="1",le="2000"} 1',
      'nv_inference_first_response_histogram_ms_bucket{model="b",version="1",le="5000"} 1',
      'nv_inference_first_response_histogram_ms_bucket{model="b",version="1",le="+Inf"} 1',
    ]);
  });

  it('keeps counts across a reload with the same buckets, starts anew with other buckets', async () => {
    const metrics = (buckets: number[]) => ({ metric_control: [control('nereid_inference_batch_size', buckets)] });
    // Each load: the observer is made while the version that serves now (if any) still serves, then it replaces it.
    const load = (buckets: number[]): StatsObserver => {
      const o = observers.observerFor('a', 1, metrics(buckets))!;
      versions = [served('a', o)];
      return o;
    };
    load([2, 4]).batch(3);
    load([2, 4]).batch(3);
    expect(await lines('nereid_inference_batch_size_count')).toEqual(['nereid_inference_batch_size_count{model="a",version="1"} 2']);
    load([8]).batch(3);
    expect(await lines('nereid_inference_batch_size_bucket')).toEqual([
      'nereid_inference_batch_size_bucket{model="a",version="1",le="8"} 1',
      'nereid_inference_batch_size_bucket{model="a",version="1",le="+Inf"} 1',
    ]);
  });

  it('shows a version that was scraped while it loaded, once it serves', async () => {
    // Made while loading (two versions load together; a scrape comes before the slower is done).
    const a = observers.observerFor('a', 1)!;
    expect(await lines('nereid_inference_batch_size_count')).toEqual([]);
    versions = [served('a', a)];
    a.batch(3);
    expect(await lines('nereid_inference_batch_size_count')).toEqual(['nereid_inference_batch_size_count{model="a",version="1"} 1']);
  });

  it('gives the first-response histogram to decoupled models only, as Triton core', async () => {
    const plain = observers.observerFor('plain', 1)!;
    const decoupled = observers.observerFor('decoupled', 1, undefined, undefined, true)!;
    versions = [served('plain', plain), served('decoupled', decoupled)];
    plain.firstResponse(2e6);
    decoupled.firstResponse(2e6);
    expect(await lines('nv_inference_first_response_histogram_ms_count')).toEqual(['nv_inference_first_response_histogram_ms_count{model="decoupled",version="1"} 1']);
    // The model that is not decoupled keeps every other family.
    expect(await lines('nv_inference_request_summary_us_count{model="plain"')).toHaveLength(1);
  });

  it('starts anew after an unload, whether or not a scrape came between (as Triton: the unload removes the series)', async () => {
    const first = observers.observerFor('a', 1, undefined, undefined, true)!;
    versions = [served('a', first)];
    first.batch(3);
    first.firstResponse(1e6);
    versions = [];
    const again = observers.observerFor('a', 1, undefined, undefined, true)!;
    versions = [served('a', again)];
    again.batch(3);
    expect(await lines('nereid_inference_batch_size_count')).toEqual(['nereid_inference_batch_size_count{model="a",version="1"} 1']);
    expect(await lines('nv_inference_first_response_histogram_ms_count')).toEqual(['nv_inference_first_response_histogram_ms_count{model="a",version="1"} 0']);
  });

  it("shows only the served versions' series; an unloaded version's leave at once", async () => {
    const a = observers.observerFor('a', 1)!;
    const b = observers.observerFor('b', 1)!;
    versions = [served('a', a), served('b', b)];
    a.batch(1);
    b.batch(1);
    expect(await lines('nereid_inference_batch_size_count')).toHaveLength(2);
    versions = [served('b', b)];
    expect(await lines('nereid_inference_batch_size_count')).toEqual(['nereid_inference_batch_size_count{model="b",version="1"} 1']);
    expect((await registry.metrics()).includes('model="a"')).toBe(false);
  });

  it("labels every histogram and summary series with the model's metric_tags, as the counters", async () => {
    const a = observers.observerFor('a', 1, undefined, undefined, true)!;
    versions = [served('a', a, { team: 'ml' })];
    a.success(1e6, 1);
    a.execution(1e5, { inputNs: 1, inferNs: 1, outputNs: 1 });
    a.batch(1);
    a.firstResponse(1e6);
    const text = await registry.metrics();
    const series = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    expect(series.length).toBeGreaterThan(40);
    for (const l of series) expect(l).toMatch(/^\w+\{_team="ml",model="a",version="1"(,(le|quantile)="[^"]+")?\} /);
  });
});

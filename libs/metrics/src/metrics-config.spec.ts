import { DEFAULT_QUANTILES, MetricsConfigError, parseMetricsConfig } from './metrics-config';

describe('parseMetricsConfig', () => {
  it("has Triton's defaults: counters on, histogram and summaries off, five quantiles", () => {
    const s = parseMetricsConfig([]);
    expect(s.counterLatencies).toBe(true);
    expect(s.histogramLatencies).toBe(false);
    expect(s.summaryLatencies).toBe(false);
    expect(s.summaryQuantiles.map((q) => q.quantile)).toEqual([0.5, 0.9, 0.95, 0.99, 0.999]);
    expect(s.firstResponseBucketsMs).toEqual([100, 500, 2000, 5000]);
    expect(s.nereidHistograms).toBe(true);
  });

  it('reads each key, quoted quantiles included, later entries winning', () => {
    const s = parseMetricsConfig([
      'counter_latencies=false',
      'summary_latencies=true',
      'summary_quantiles="0.5:0.05,0.9:0.01"',
      'histogram_latencies=true',
      'first_response_histogram_buckets=10,100',
      'latency_buckets_ms=1,2.5,10',
      'batch_size_buckets=1,4,16',
      'nereid_histograms=false',
      'nereid_histograms=true',
    ]);
    expect(s).toMatchObject({
      counterLatencies: false,
      summaryLatencies: true,
      summaryQuantiles: [
        { quantile: 0.5, error: 0.05 },
        { quantile: 0.9, error: 0.01 },
      ],
      histogramLatencies: true,
      firstResponseBucketsMs: [10, 100],
      latencyBucketsMs: [1, 2.5, 10],
      batchSizeBuckets: [1, 4, 16],
      nereidHistograms: true,
    });
    expect(DEFAULT_QUANTILES).toHaveLength(5);
  });

  it.each([
    ['summary_latencies=maybe', "metrics config 'summary_latencies' expects true or false, got 'maybe'"],
    ['summary_quantiles=0.5', "metrics config 'summary_quantiles' expects <quantile>:<error>[,...] with 0 < quantile < 1, got '0.5'"],
    ['summary_quantiles=1.5:0.1', "metrics config 'summary_quantiles' expects <quantile>:<error>[,...] with 0 < quantile < 1, got '1.5:0.1'"],
    ['latency_buckets_ms=5,1', "metrics config 'latency_buckets_ms' expects increasing numbers separated by commas, got '5,1'"],
    ['batch_size_buckets=0,2', "metrics config 'batch_size_buckets' expects increasing numbers separated by commas, got '0,2'"],
    ['no_equals', "metrics config 'no_equals' must be <setting>=<value>"],
  ])('refuses %s', (entry, message) => {
    expect(() => parseMetricsConfig([entry])).toThrow(new MetricsConfigError(message));
  });

  it('names the keys it knows when one is unknown', () => {
    expect(() => parseMetricsConfig(['histogram_buckets=1'])).toThrow(/unknown metrics config 'histogram_buckets': expected counter_latencies, /);
  });
});

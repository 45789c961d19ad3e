/**
 * `--metrics-config <key>=<value>` (repeatable), Triton's keys and Nereid's own. Parsed once at
 * start-up into a frozen settings object; a bad key or value is a usage error with the key named.
 */

export interface Quantile {
  quantile: number;
  error: number;
}

export interface MetricsSettings {
  /** Triton: the cumulative `nv_inference_*_duration_us` counters (default true). */
  counterLatencies: boolean;
  /** Triton: `nv_inference_first_response_histogram_ms` (default false). */
  histogramLatencies: boolean;
  /** Triton: the `nv_inference_*_summary_us` summaries (default false). */
  summaryLatencies: boolean;
  /** Triton: `summary_quantiles="0.5:0.05,0.9:0.01,..."`. */
  summaryQuantiles: Quantile[];
  /** Triton's first-response histogram buckets, ms (default 100, 500, 2000, 5000). */
  firstResponseBucketsMs: number[];
  /** Nereid: the `nereid_*` latency and batch histograms and gauges (default true). */
  nereidHistograms: boolean;
  /** Nereid: buckets of the request / queue / compute histograms, ms. */
  latencyBucketsMs: number[];
  /** Nereid: buckets of the batch-size histogram. */
  batchSizeBuckets: number[];
}

export const DEFAULT_QUANTILES: readonly Quantile[] = [
  { quantile: 0.5, error: 0.05 },
  { quantile: 0.9, error: 0.01 },
  { quantile: 0.95, error: 0.001 },
  { quantile: 0.99, error: 0.001 },
  { quantile: 0.999, error: 0.0001 },
];

export const DEFAULT_LATENCY_BUCKETS_MS: readonly number[] = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000];

export const DEFAULT_BATCH_SIZE_BUCKETS: readonly number[] = [1, 2, 4, 8, 16, 32, 64, 128, 256];

export function defaultMetricsSettings(): MetricsSettings {
  return {
    counterLatencies: true,
    histogramLatencies: false,
    summaryLatencies: false,
    summaryQuantiles: DEFAULT_QUANTILES.map((q) => ({ ...q })),
    firstResponseBucketsMs: [100, 500, 2000, 5000],
    nereidHistograms: true,
    latencyBucketsMs: [...DEFAULT_LATENCY_BUCKETS_MS],
    batchSizeBuckets: [...DEFAULT_BATCH_SIZE_BUCKETS],
  };
}

/** A `--metrics-config` entry that cannot be used; the message names the entry. */
export class MetricsConfigError extends Error {}

function bool(key: string, value: string): boolean {
  const v = value.toLowerCase();
  if (v === 'true' || v === '1' || v === 'on') return true;
  if (v === 'false' || v === '0' || v === 'off') return false;
  throw new MetricsConfigError(`metrics config '${key}' expects true or false, got '${value}'`);
}

function unquote(value: string): string {
  return value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
}

/** `0.5:0.05,0.9:0.01`: each quantile in (0, 1), each error in [0, 1). */
export function parseQuantiles(value: string): Quantile[] {
  const out: Quantile[] = [];
  for (const part of unquote(value).split(',')) {
    const [q, e, extra] = part.trim().split(':');
    const quantile = Number(q);
    const error = Number(e);
    if (extra !== undefined || q === undefined || e === undefined || q === '' || e === '' || !(quantile > 0 && quantile < 1) || !(error >= 0 && error < 1)) {
      throw new MetricsConfigError(`metrics config 'summary_quantiles' expects <quantile>:<error>[,...] with 0 < quantile < 1, got '${part}'`);
    }
    out.push({ quantile, error });
  }
  return out;
}

/** `1,5,10`: finite, strictly increasing numbers. */
export function parseBuckets(key: string, value: string, min = Number.NEGATIVE_INFINITY): number[] {
  const out = unquote(value)
    .split(',')
    .map((s) => s.trim());
  const nums = out.map(Number);
  nums.forEach((n, i) => {
    if (out[i] === '' || !Number.isFinite(n) || n < min || (i > 0 && n <= nums[i - 1])) {
      throw new MetricsConfigError(`metrics config '${key}' expects increasing numbers separated by commas, got '${value}'`);
    }
  });
  return nums;
}

/** Applies `--metrics-config` entries (`key=value` each) over the defaults. */
export function parseMetricsConfig(entries: readonly string[]): MetricsSettings {
  const s = defaultMetricsSettings();
  for (const entry of entries) {
    const eq = entry.indexOf('=');
    if (eq <= 0) throw new MetricsConfigError(`metrics config '${entry}' must be <setting>=<value>`);
    const key = entry.slice(0, eq).trim();
    const value = entry.slice(eq + 1).trim();
    switch (key) {
      case 'counter_latencies':
        s.counterLatencies = bool(key, value);
        break;
      case 'histogram_latencies':
        s.histogramLatencies = bool(key, value);
        break;
      case 'summary_latencies':
        s.summaryLatencies = bool(key, value);
        break;
      case 'summary_quantiles':
        s.summaryQuantiles = parseQuantiles(value);
        break;
      case 'first_response_histogram_buckets':
        s.firstResponseBucketsMs = parseBuckets(key, value, 0);
        break;
      case 'nereid_histograms':
        s.nereidHistograms = bool(key, value);
        break;
      case 'latency_buckets_ms':
        s.latencyBucketsMs = parseBuckets(key, value, 0);
        break;
      case 'batch_size_buckets':
        s.batchSizeBuckets = parseBuckets(key, value, 1);
        break;
      default:
        throw new MetricsConfigError(
          `unknown metrics config '${key}': expected counter_latencies, histogram_latencies, summary_latencies, summary_quantiles, first_response_histogram_buckets, nereid_histograms, latency_buckets_ms or batch_size_buckets`,
        );
    }
  }
  return s;
}

import type { Registry } from 'prom-client';
import type { MetricsSettings } from './metrics-config';
import { BATCH_SIZE_HISTOGRAM, COMPUTE_HISTOGRAM, FIRST_RESPONSE_HISTOGRAM, histogramBuckets, QUEUE_HISTOGRAM, REQUEST_HISTOGRAM } from './model-metrics';
import { HistogramSeries, SummarySeries } from './series';
import { SnapshotHistogram, SnapshotSummary, type Labels } from './snapshot-family';
import type { ComputePhases, FailureReason, ServedVersion, StatsObserver } from './stats-port';
import { modelLabels } from './triton-families';

const NS_PER_MS = 1e6;
const NS_PER_US = 1e3;

/** The series of one family, one per model version (`model\0version`). */
class Family<S> {
  readonly series = new Map<string, { model: string; version: string; series: S }>();

  /** `fits`: whether a version's series can go on as it is (a reload may bring other buckets). */
  constructor(
    private readonly make: (buckets?: readonly number[]) => S,
    private readonly fits: (series: S, buckets?: readonly number[]) => boolean = () => true,
  ) {}

  /** The series of a model version: its counts go on across a reload, unless its buckets changed. */
  bind(model: string, version: string, buckets?: readonly number[]): S {
    const key = `${model}\0${version}`;
    let entry = this.series.get(key);
    if (!entry || !this.fits(entry.series, buckets)) {
      entry = { model, version, series: this.make(buckets) };
      this.series.set(key, entry);
    }
    return entry.series;
  }
}

const sameBuckets = (a: readonly number[], b: readonly number[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

interface Histograms {
  request: HistogramSeries;
  queue: HistogramSeries;
  compute: HistogramSeries;
  batch: HistogramSeries;
}

interface Summaries {
  request: SummarySeries;
  queue: SummarySeries;
  input: SummarySeries;
  infer: SummarySeries;
  output: SummarySeries;
}

/**
 * The per-request families: Triton's first-response histogram and latency summaries (when
 * `--metrics-config` enables them) and Nereid's latency and batch-size histograms (on unless
 * `nereid_histograms=false`). Each served model version gets a StatsObserver bound to its series;
 * the series of a version no longer served leave the exposition at the next scrape.
 */
export class ModelObservers {
  private readonly families: unknown[] = [];
  private readonly firstResponse?: Family<HistogramSeries>;
  private readonly summaries?: Record<keyof Summaries, Family<SummarySeries>>;
  private readonly nereid?: Record<keyof Histograms, Family<HistogramSeries>>;

  constructor(
    registry: Registry,
    settings: MetricsSettings,
    private readonly served: () => ServedVersion[],
  ) {
    // A model's `model_metrics` may give a histogram other buckets than these (observerFor).
    const histogram = (name: string, help: string, buckets: number[]): Family<HistogramSeries> => {
      const family = new Family(
        (own) => new HistogramSeries(own ?? buckets),
        (series, own) => sameBuckets(series.upper, own ?? buckets),
      );
      this.families.push(family);
      new SnapshotHistogram(name, help, registry, () =>
        this.live(family).map(({ labels, series }) => ({ labels, buckets: series.upper, counts: series.counts, sum: series.sum, count: series.count })),
      );
      return family;
    };
    const quantiles = settings.summaryQuantiles.map((q) => q.quantile);
    const summary = (name: string, help: string): Family<SummarySeries> => {
      const family = new Family(() => new SummarySeries());
      this.families.push(family);
      new SnapshotSummary(name, help, registry, () =>
        this.live(family).map(({ labels, series }) => {
          const values = series.quantiles(quantiles);
          return { labels, sum: series.sum, count: series.count, quantiles: quantiles.map((quantile, i) => ({ quantile, value: values[i] })) };
        }),
      );
      return family;
    };
    if (settings.histogramLatencies) {
      this.firstResponse = histogram(FIRST_RESPONSE_HISTOGRAM, 'Duration from request to first response in milliseconds', settings.firstResponseBucketsMs);
    }
    if (settings.summaryLatencies) {
      this.summaries = {
        request: summary('nv_inference_request_summary_us', 'Summary of inference request duration in microseconds (includes cached requests)'),
        queue: summary('nv_inference_queue_summary_us', 'Summary of inference queuing duration in microseconds (includes cached requests)'),
        input: summary('nv_inference_compute_input_summary_us', 'Cumulative compute input duration in microseconds (does not include cached requests)'),
        infer: summary('nv_inference_compute_infer_summary_us', 'Cumulative compute inference duration in microseconds (does not include cached requests)'),
        output: summary('nv_inference_compute_output_summary_us', 'Cumulative inference compute output duration in microseconds (does not include cached requests)'),
      };
    }
    if (settings.nereidHistograms) {
      const b = settings.latencyBucketsMs;
      this.nereid = {
        request: histogram(REQUEST_HISTOGRAM, 'Duration of successful inference requests, from arrival to final response, in milliseconds', b),
        queue: histogram(QUEUE_HISTOGRAM, 'Time successful requests waited in the scheduler queue, in milliseconds', b),
        compute: histogram(COMPUTE_HISTOGRAM, 'Compute time (input, infer and output) of successful requests, in milliseconds', b),
        batch: histogram(BATCH_SIZE_HISTOGRAM, 'Inferences per model execution (the batch size of each execution)', settings.batchSizeBuckets),
      };
    }
  }

  /**
   * The observer of one model version, or undefined when no per-request family is enabled.
   * `modelMetrics` (the config's `model_metrics`) sets the buckets of its histograms by family
   * name; what Triton would ignore is ignored with a warning, buckets out of order throw.
   */
  observerFor(model: string, version: number, modelMetrics?: unknown, warn: (message: string) => void = () => undefined): StatsObserver | undefined {
    const buckets = histogramBuckets(model, modelMetrics, warn);
    if (this.families.length === 0) return undefined;
    const v = String(version);
    const s = this.summaries;
    const n = this.nereid;
    return new BoundObserver(
      this.firstResponse?.bind(model, v, buckets.get(FIRST_RESPONSE_HISTOGRAM)),
      s && { request: s.request.bind(model, v), queue: s.queue.bind(model, v), input: s.input.bind(model, v), infer: s.infer.bind(model, v), output: s.output.bind(model, v) },
      n && {
        request: n.request.bind(model, v, buckets.get(REQUEST_HISTOGRAM)),
        queue: n.queue.bind(model, v, buckets.get(QUEUE_HISTOGRAM)),
        compute: n.compute.bind(model, v, buckets.get(COMPUTE_HISTOGRAM)),
        batch: n.batch.bind(model, v, buckets.get(BATCH_SIZE_HISTOGRAM)),
      },
    );
  }

  /**
   * A family's series of the versions served now, model then version order, each with the labels
   * of Triton's per-model families (`model`, `version` and the `_<key>` labels of `metric_tags`);
   * the series of versions no longer served are dropped.
   */
  private live<S>(family: Family<S>): { labels: Labels; series: S }[] {
    const served = new Map(this.served().map((v) => [`${v.model}\0${v.version}`, v]));
    const out: { labels: Labels; series: S; model: string; version: string }[] = [];
    for (const [key, entry] of [...family.series]) {
      const v = served.get(key);
      if (v === undefined) family.series.delete(key);
      else out.push({ labels: modelLabels(v), series: entry.series, model: entry.model, version: entry.version });
    }
    return out.sort((a, b) => a.model.localeCompare(b.model) || Number(a.version) - Number(b.version));
  }
}

/** One model version's observer: every series bound once, nothing looked up per request. */
class BoundObserver implements StatsObserver {
  constructor(
    private readonly first: HistogramSeries | undefined,
    private readonly summaries: Summaries | undefined,
    private readonly nereid: Histograms | undefined,
  ) {}

  success(requestNs: number): void {
    this.summaries?.request.observe(Math.floor(requestNs / NS_PER_US));
    this.nereid?.request.observe(requestNs / NS_PER_MS);
  }

  failure(_requestNs: number, _reason: FailureReason): void {
    // Triton's latency families count successful requests only (as its duration counters do).
  }

  execution(queueNs: number, compute: ComputePhases): void {
    const s = this.summaries;
    if (s) {
      s.queue.observe(Math.floor(queueNs / NS_PER_US));
      s.input.observe(Math.floor(compute.inputNs / NS_PER_US));
      s.infer.observe(Math.floor(compute.inferNs / NS_PER_US));
      s.output.observe(Math.floor(compute.outputNs / NS_PER_US));
    }
    const n = this.nereid;
    if (n) {
      n.queue.observe(queueNs / NS_PER_MS);
      n.compute.observe((compute.inputNs + compute.inferNs + compute.outputNs) / NS_PER_MS);
    }
  }

  batch(batchSize: number): void {
    this.nereid?.batch.observe(batchSize);
  }

  firstResponse(ns: number): void {
    this.first?.observe(ns / NS_PER_MS);
  }
}

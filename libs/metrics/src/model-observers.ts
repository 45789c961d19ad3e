import type { Registry } from 'prom-client';
import type { MetricsSettings } from './metrics-config';
import { HistogramSeries, SummarySeries } from './series';
import { SnapshotHistogram, SnapshotSummary } from './snapshot-family';
import type { ComputePhases, FailureReason, ServedVersion, StatsObserver } from './stats-port';

const NS_PER_MS = 1e6;
const NS_PER_US = 1e3;

/** The series of one family, one per model version (`model\0version`). */
class Family<S> {
  readonly series = new Map<string, { model: string; version: string; series: S }>();

  constructor(private readonly make: () => S) {}

  bind(model: string, version: string): S {
    const key = `${model}\0${version}`;
    let entry = this.series.get(key);
    if (!entry) {
      entry = { model, version, series: this.make() };
      this.series.set(key, entry);
    }
    return entry.series;
  }
}

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
  private readonly families: Family<unknown>[] = [];
  private readonly firstResponse?: Family<HistogramSeries>;
  private readonly summaries?: Record<keyof Summaries, Family<SummarySeries>>;
  private readonly nereid?: Record<keyof Histograms, Family<HistogramSeries>>;

  constructor(
    registry: Registry,
    settings: MetricsSettings,
    private readonly served: () => ServedVersion[],
  ) {
    const histogram = (name: string, help: string, buckets: number[]): Family<HistogramSeries> => {
      const family = new Family(() => new HistogramSeries(buckets));
      this.families.push(family);
      new SnapshotHistogram(name, help, registry, () =>
        this.live(family).map(({ model, version, series }) => ({ labels: { model, version }, buckets: series.upper, counts: series.counts, sum: series.sum, count: series.count })),
      );
      return family;
    };
    const quantiles = settings.summaryQuantiles.map((q) => q.quantile);
    const summary = (name: string, help: string): Family<SummarySeries> => {
      const family = new Family(() => new SummarySeries());
      this.families.push(family);
      new SnapshotSummary(name, help, registry, () =>
        this.live(family).map(({ model, version, series }) => {
          const values = series.quantiles(quantiles);
          return { labels: { model, version }, sum: series.sum, count: series.count, quantiles: quantiles.map((quantile, i) => ({ quantile, value: values[i] })) };
        }),
      );
      return family;
    };
    if (settings.histogramLatencies) {
      this.firstResponse = histogram('nv_inference_first_response_histogram_ms', 'Duration from request to first response in milliseconds', settings.firstResponseBucketsMs);
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
        request: histogram('nereid_inference_request_duration_ms', 'Duration of successful inference requests, from arrival to final response, in milliseconds', b),
        queue: histogram('nereid_inference_queue_duration_ms', 'Time successful requests waited in the scheduler queue, in milliseconds', b),
        compute: histogram('nereid_inference_compute_duration_ms', 'Compute time (input, infer and output) of successful requests, in milliseconds', b),
        batch: histogram('nereid_inference_batch_size', 'Inferences per model execution (the batch size of each execution)', settings.batchSizeBuckets),
      };
    }
  }

  /** The observer of one model version, or undefined when no per-request family is enabled. */
  observerFor(model: string, version: number): StatsObserver | undefined {
    if (this.families.length === 0) return undefined;
    const v = String(version);
    const s = this.summaries;
    const n = this.nereid;
    return new BoundObserver(
      this.firstResponse?.bind(model, v),
      s && { request: s.request.bind(model, v), queue: s.queue.bind(model, v), input: s.input.bind(model, v), infer: s.infer.bind(model, v), output: s.output.bind(model, v) },
      n && { request: n.request.bind(model, v), queue: n.queue.bind(model, v), compute: n.compute.bind(model, v), batch: n.batch.bind(model, v) },
    );
  }

  /** A family's series of the versions served now, model then version order; the others are dropped. */
  private live<S>(family: Family<S>): { model: string; version: string; series: S }[] {
    const served = new Set(this.served().map((v) => `${v.model}\0${v.version}`));
    for (const key of [...family.series.keys()]) if (!served.has(key)) family.series.delete(key);
    return [...family.series.values()].sort((a, b) => a.model.localeCompare(b.model) || Number(a.version) - Number(b.version));
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

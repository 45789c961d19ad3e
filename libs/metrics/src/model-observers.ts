import type { Registry } from 'prom-client';
import type { MetricsSettings } from './metrics-config';
import { BATCH_SIZE_HISTOGRAM, COMPUTE_HISTOGRAM, FIRST_RESPONSE_HISTOGRAM, histogramBuckets, QUEUE_HISTOGRAM, REQUEST_HISTOGRAM } from './model-metrics';
import { HistogramSeries, SummarySeries } from './series';
import { SnapshotHistogram, SnapshotSummary, type Labels } from './snapshot-family';
import type { ComputePhases, FailureReason, ServedVersion, StatsObserver } from './stats-port';
import { modelLabels } from './triton-families';

const NS_PER_MS = 1e6;
const NS_PER_US = 1e3;

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
 * `nereid_histograms=false`). Each model version gets, as it loads, a StatsObserver holding its
 * own series; a scrape reads the series of the observers of the versions served then. So a
 * version's series show exactly while it is served: not while it loads (nor are they lost if a
 * scrape comes meanwhile), and they leave with its unload. As Triton's reporters, a reload (the
 * version still serving while its replacement loads) carries the series on, unless the reload
 * brings other buckets; a load after an unload starts anew.
 */
export class ModelObservers {
  private readonly enabled: boolean;
  /** The default buckets of each histogram family that is on, by family name. */
  private readonly histogramBuckets = new Map<string, readonly number[]>();
  private readonly summariesOn: boolean;

  constructor(
    registry: Registry,
    settings: MetricsSettings,
    private readonly served: () => ServedVersion[],
  ) {
    const histogram = (name: string, help: string, buckets: readonly number[], pick: (o: BoundObserver) => HistogramSeries | undefined): void => {
      this.histogramBuckets.set(name, buckets);
      new SnapshotHistogram(name, help, registry, () =>
        this.live(pick).map(({ labels, series }) => ({ labels, buckets: series.upper, counts: series.counts, sum: series.sum, count: series.count })),
      );
    };
    const quantiles = settings.summaryQuantiles.map((q) => q.quantile);
    const summary = (name: string, help: string, pick: (s: Summaries) => SummarySeries): void => {
      new SnapshotSummary(name, help, registry, () =>
        this.live((o) => o.summaries && pick(o.summaries)).map(({ labels, series }) => {
          const values = series.quantiles(quantiles);
          return { labels, sum: series.sum, count: series.count, quantiles: quantiles.map((quantile, i) => ({ quantile, value: values[i] })) };
        }),
      );
    };
    if (settings.histogramLatencies) {
      histogram(FIRST_RESPONSE_HISTOGRAM, 'Duration from request to first response in milliseconds', settings.firstResponseBucketsMs, (o) => o.first);
    }
    this.summariesOn = settings.summaryLatencies;
    if (settings.summaryLatencies) {
      summary('nv_inference_request_summary_us', 'Summary of inference request duration in microseconds (includes cached requests)', (s) => s.request);
      summary('nv_inference_queue_summary_us', 'Summary of inference queuing duration in microseconds (includes cached requests)', (s) => s.queue);
      summary('nv_inference_compute_input_summary_us', 'Cumulative compute input duration in microseconds (does not include cached requests)', (s) => s.input);
      summary('nv_inference_compute_infer_summary_us', 'Cumulative compute inference duration in microseconds (does not include cached requests)', (s) => s.infer);
      summary('nv_inference_compute_output_summary_us', 'Cumulative inference compute output duration in microseconds (does not include cached requests)', (s) => s.output);
    }
    if (settings.nereidHistograms) {
      const b = settings.latencyBucketsMs;
      histogram(REQUEST_HISTOGRAM, 'Duration of successful inference requests, from arrival to final response, in milliseconds', b, (o) => o.nereid?.request);
      histogram(QUEUE_HISTOGRAM, 'Time successful requests waited in the scheduler queue, in milliseconds', b, (o) => o.nereid?.queue);
      histogram(COMPUTE_HISTOGRAM, 'Compute time (input, infer and output) of successful requests, in milliseconds', b, (o) => o.nereid?.compute);
      histogram(BATCH_SIZE_HISTOGRAM, 'Inferences per model execution (the batch size of each execution)', settings.batchSizeBuckets, (o) => o.nereid?.batch);
    }
    this.enabled = this.histogramBuckets.size > 0 || this.summariesOn;
  }

  /**
   * The observer of one model version, or undefined when no per-request family is enabled.
   * `modelMetrics` (the config's `model_metrics`) sets the buckets of its histograms by family
   * name; what Triton would ignore is ignored with a warning, buckets out of order throw. Called
   * as the version loads: the series of the same version serving now (a reload) go on. Only a
   * `decoupled` model has Triton's first-response histogram, as in Triton core (its QA checks that a
   * model that is not decoupled has none).
   */
  observerFor(
    model: string,
    version: number,
    modelMetrics?: unknown,
    warn: (message: string) => void = () => undefined,
    decoupled = false,
  ): StatsObserver | undefined {
    const own = histogramBuckets(model, modelMetrics, warn);
    if (!this.enabled) return undefined;
    const v = String(version);
    const serving = this.served().find((s) => s.model === model && s.version === v)?.observer;
    const prev = serving instanceof BoundObserver ? serving : undefined;
    const histogram = (family: string, old: HistogramSeries | undefined): HistogramSeries | undefined => {
      const defaults = this.histogramBuckets.get(family);
      if (defaults === undefined) return undefined;
      const buckets = own.get(family) ?? defaults;
      return old !== undefined && sameBuckets(old.upper, buckets) ? old : new HistogramSeries(buckets);
    };
    const summaries = this.summariesOn
      ? (prev?.summaries ?? { request: new SummarySeries(), queue: new SummarySeries(), input: new SummarySeries(), infer: new SummarySeries(), output: new SummarySeries() })
      : undefined;
    const request = histogram(REQUEST_HISTOGRAM, prev?.nereid?.request);
    return new BoundObserver(
      decoupled ? histogram(FIRST_RESPONSE_HISTOGRAM, prev?.first) : undefined,
      summaries,
      request && {
        request,
        queue: histogram(QUEUE_HISTOGRAM, prev?.nereid?.queue)!,
        compute: histogram(COMPUTE_HISTOGRAM, prev?.nereid?.compute)!,
        batch: histogram(BATCH_SIZE_HISTOGRAM, prev?.nereid?.batch)!,
      },
    );
  }

  /**
   * A family's series of the versions served now (in the source's order: model, then version),
   * each with the labels of Triton's per-model families (`model`, `version` and the `_<key>`
   * labels of `metric_tags`).
   */
  private live<S>(pick: (o: BoundObserver) => S | undefined): { labels: Labels; series: S }[] {
    const out: { labels: Labels; series: S }[] = [];
    for (const v of this.served()) {
      const series = v.observer instanceof BoundObserver ? pick(v.observer) : undefined;
      if (series !== undefined) out.push({ labels: modelLabels(v), series });
    }
    return out;
  }
}

/** One model version's observer: every series bound once, nothing looked up per request. */
class BoundObserver implements StatsObserver {
  constructor(
    readonly first: HistogramSeries | undefined,
    readonly summaries: Summaries | undefined,
    readonly nereid: Histograms | undefined,
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

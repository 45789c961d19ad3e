import { Histogram, Summary, type Registry } from 'prom-client';
import type { MetricsSettings } from './metrics-config';
import type { ComputePhases, FailureReason, ServedVersion, StatsObserver } from './stats-port';

const LABELS = ['model', 'version'] as const;
type Label = (typeof LABELS)[number];

const NS_PER_MS = 1e6;
const NS_PER_US = 1e3;

/** Observe-only handle of one label set (prom-client's `labels(...)` child). */
interface Observe {
  observe(value: number): void;
}

/** A family observed per request whose series of unloaded models are dropped at each scrape. */
interface Observed {
  family: Histogram<Label> | Summary<Label>;
}

/**
 * The per-request families: Triton's first-response histogram and latency summaries (when
 * `--metrics-config` enables them) and Nereid's latency and batch-size histograms (on unless
 * `nereid_histograms=false`). Each served model version gets a StatsObserver bound to its label
 * set; the series of a version no longer served leave the exposition at the next scrape.
 */
export class ModelObservers {
  private readonly families: Observed[] = [];
  private readonly firstResponse?: Histogram<Label>;
  private readonly summaries?: { request: Summary<Label>; queue: Summary<Label>; input: Summary<Label>; infer: Summary<Label>; output: Summary<Label> };
  private readonly nereid?: { request: Histogram<Label>; queue: Histogram<Label>; compute: Histogram<Label>; batch: Histogram<Label> };
  /** `model\0version` of every label set observed so far. */
  private readonly seen = new Set<string>();

  constructor(
    registry: Registry,
    settings: MetricsSettings,
    private readonly served: () => ServedVersion[],
  ) {
    const collect = (): void => this.prune();
    const histogram = (name: string, help: string, buckets: number[]): Histogram<Label> => {
      const h = new Histogram<Label>({ name, help, labelNames: LABELS, buckets, registers: [registry], collect });
      this.families.push({ family: h });
      return h;
    };
    const summary = (name: string, help: string): Summary<Label> => {
      const s = new Summary<Label>({
        name,
        help,
        labelNames: LABELS,
        percentiles: settings.summaryQuantiles.map((q) => q.quantile),
        maxAgeSeconds: 60,
        ageBuckets: 5,
        registers: [registry],
        collect,
      });
      this.families.push({ family: s });
      return s;
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
    this.seen.add(`${model}\0${v}`);
    const bind = (f: Histogram<Label> | Summary<Label> | undefined): Observe | undefined => f?.labels(model, v);
    const s = this.summaries;
    const n = this.nereid;
    return new BoundObserver(
      bind(this.firstResponse),
      s && { request: bind(s.request)!, queue: bind(s.queue)!, input: bind(s.input)!, infer: bind(s.infer)!, output: bind(s.output)! },
      n && { request: bind(n.request)!, queue: bind(n.queue)!, compute: bind(n.compute)!, batch: bind(n.batch)! },
    );
  }

  /** Drops the series of model versions no longer served. */
  private prune(): void {
    if (this.seen.size === 0) return;
    const live = new Set(this.served().map((v) => `${v.model}\0${v.version}`));
    for (const key of [...this.seen]) {
      if (live.has(key)) continue;
      this.seen.delete(key);
      const [model, version] = key.split('\0');
      for (const { family } of this.families) family.remove(model, version);
    }
  }
}

/** One model version's observer: every handle bound once, nothing looked up per request. */
class BoundObserver implements StatsObserver {
  constructor(
    private readonly first: Observe | undefined,
    private readonly summaries: { request: Observe; queue: Observe; input: Observe; infer: Observe; output: Observe } | undefined,
    private readonly nereid: { request: Observe; queue: Observe; compute: Observe; batch: Observe } | undefined,
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

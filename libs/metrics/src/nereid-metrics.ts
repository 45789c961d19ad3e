import { Registry } from 'prom-client';
import { CpuMetrics } from './cpu-metrics';
import { CustomMetrics } from './custom-metrics';
import { GpuMetrics } from './gpu-metrics';
import type { MetricsSettings } from './metrics-config';
import { ModelObservers } from './model-observers';
import { SnapshotCounter, SnapshotGauge, type Sample } from './snapshot-family';
import type { StatsObserver, StatsSource } from './stats-port';
import { modelLabels, registerTritonFamilies } from './triton-families';

export interface NereidMetricsOptions {
  settings: MetricsSettings;
  /** `--allow-cpu-metrics` (default true). */
  cpu: boolean;
  /** `--allow-gpu-metrics` (default true): the GPU gauges, where an nvidia-smi is on PATH. Default false here. */
  gpu?: boolean;
  /** `--metrics-interval-ms`: how often the CPU and GPU gauges are polled (default 2000). */
  intervalMs: number;
}

/**
 * Every family Nereid exports on the metrics port, in one prom-client registry: Triton's per-model
 * families (read from the statistics at each scrape), the per-request histograms and summaries,
 * Nereid's gauges, the CPU and GPU gauges and the python models' custom metrics. The GPU families
 * show only where nvidia-smi reads a GPU.
 */
export class NereidMetrics {
  readonly registry = new Registry();
  readonly custom: CustomMetrics;
  private readonly observers: ModelObservers;
  private readonly cpu?: CpuMetrics;
  private readonly gpu?: GpuMetrics;
  private source?: StatsSource;

  constructor(private readonly options: NereidMetricsOptions) {
    const source: StatsSource = {
      served: () => this.source?.served() ?? [],
      pending: (key) => this.source?.pending(key) ?? 0,
      inflight: (key) => this.source?.inflight(key) ?? 0,
      sequenceSlotsInUse: (key) => this.source?.sequenceSlotsInUse(key),
    };
    const { settings } = options;
    registerTritonFamilies(this.registry, source, settings);
    this.observers = new ModelObservers(this.registry, settings, source.served);
    this.custom = new CustomMetrics(this.registry, (name) => this.registry.getSingleMetric(name) !== undefined);
    if (settings.nereidHistograms) {
      const each = (sample: (v: ReturnType<StatsSource['served']>[number]) => Sample[]) => () => source.served().flatMap(sample);
      new SnapshotGauge(
        'nereid_inference_queue_depth',
        "Requests in the model's scheduler: waiting in its queue plus executing on an instance",
        this.registry,
        each((v) => [{ labels: modelLabels(v), value: source.pending(v.key) + source.inflight(v.key) }]),
      );
      new SnapshotGauge(
        'nereid_sequence_slots_in_use',
        'Sequence batcher slots owned by a live sequence, over all instances of the model',
        this.registry,
        each((v) => {
          const n = source.sequenceSlotsInUse(v.key);
          return n === undefined ? [] : [{ labels: modelLabels(v), value: n }];
        }),
      );
      new SnapshotCounter(
        'nereid_python_stub_restarts_total',
        'Python stub processes that died and were restarted',
        this.registry,
        each((v) => {
          const n = this.custom.stubRestarts(v.model, v.version);
          return n > 0 ? [{ labels: modelLabels(v), value: n }] : [];
        }),
      );
    }
    if (options.cpu) this.cpu = new CpuMetrics(this.registry);
    if (options.gpu) this.gpu = new GpuMetrics(this.registry);
  }

  /** Where the served models' statistics are read (set once the core exists). */
  attach(source: StatsSource): void {
    this.source = source;
  }

  /**
   * The observer of a model version as it loads (undefined when no per-request family is on), its
   * histograms' buckets as the config's `model_metrics` sets them; `warn` hears of the entries
   * ignored, and buckets that cannot be used throw (ModelMetricsError: the load fails).
   */
  observerFor(model: string, version: number, modelMetrics?: unknown, warn?: (message: string) => void, decoupled = false): StatsObserver | undefined {
    const observer = this.observers.observerFor(model, version, modelMetrics, warn, decoupled);
    // As the histograms: a load of a version that does not serve now (a first load, or after an
    // unload) starts its stub restarts from none; a reload carries them on. (A restart during
    // this load's warmup is not counted then.)
    const v = String(version);
    if (!this.source?.served().some((s) => s.model === model && s.version === v)) this.custom.clearStubRestarts(model, v);
    return observer;
  }

  start(): void {
    this.cpu?.start(this.options.intervalMs);
    this.gpu?.start(this.options.intervalMs);
  }

  stop(): void {
    this.cpu?.stop();
    this.gpu?.stop();
  }

  /** The text exposition (Prometheus format 0.0.4). */
  expose(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

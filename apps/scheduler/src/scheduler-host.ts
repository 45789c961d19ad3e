import type { ModelConfig } from '@nereid/model-config';
import { InferenceError, type ExecutionItem } from '@nereid/protocol';
import { createScheduler, type EnsembleServices, type Scheduler } from '@nereid/scheduling';
import type { BatchReport, ModelKey, SchedulerChannel, WorkerCapacity, WorkerChannel } from '@nereid/transport';

/** What the schedulers need from the rest of the server: ensembles send their steps back into it. */
export interface SchedulerServices {
  /** Sends a step request through the server's infer path (its model's scheduler, statistics). */
  inferStep: EnsembleServices['inferStep'];
  modelConfig: EnsembleServices['modelConfig'];
  /** Statistics of one execution that no worker ran (an ensemble request). */
  onBatch(report: BatchReport): void;
}

/** Hosts one scheduler per loaded model version; batches go to the workers through the channel. */
export class SchedulerHost implements SchedulerChannel {
  private readonly schedulers = new Map<ModelKey, Scheduler>();
  /** The model each open key serves. */
  private readonly models = new Map<ModelKey, string>();
  /**
   * Sequence batchers being closed while another runtime of their model serves (a reload): the
   * requests of the sequences they hold still go to them, wherever the core sent them.
   */
  private readonly draining = new Map<ModelKey, { model: string; scheduler: Scheduler }>();

  constructor(
    private readonly worker: WorkerChannel,
    private readonly services?: SchedulerServices,
  ) {}

  open(key: ModelKey, config: ModelConfig, capacity: WorkerCapacity, modelDir?: string): void {
    const services = this.services;
    const scheduler = createScheduler(config, {
      instanceCount: Math.max(1, capacity.instances),
      depth: capacity.depth,
      modelDir,
      execute: (instance, items) => this.worker.execute(key, instance, items),
      ensemble: services && {
        inferStep: services.inferStep,
        modelConfig: services.modelConfig,
        onExecution: (batchSize, compute) => services.onBatch({ key, batchSize, requestCount: 1, compute }),
      },
    });
    this.schedulers.set(key, scheduler);
    this.models.set(key, config.name ?? '');
  }

  enqueue(key: ModelKey, item: ExecutionItem): void {
    if (this.draining.size > 0 && this.toDraining(item)) return;
    const s = this.schedulers.get(key);
    if (!s) {
      item.sink.fail(InferenceError.unavailable(`model '${item.request.modelName}' is not being served`));
      return;
    }
    s.enqueue(item);
  }

  /** A request of a sequence that lives on a draining sequence batcher goes there. */
  private toDraining(item: ExecutionItem): boolean {
    const r = item.request;
    if (r.sequenceStart || !r.sequenceId) return false;
    for (const d of this.draining.values()) {
      if (d.model === r.modelName && d.scheduler.hasSequence?.(r.sequenceId)) {
        d.scheduler.enqueue(item);
        return true;
      }
    }
    return false;
  }

  /**
   * Stops the key's scheduler and waits for its requests. With `drainSequences` (a reload switched
   * traffic to another runtime of the model), a sequence batcher also waits for its live sequences,
   * whose requests keep coming here until each ends or idles out.
   */
  async close(key: ModelKey, options?: { drainSequences?: boolean }): Promise<void> {
    const s = this.schedulers.get(key);
    if (!s) return;
    const sequences = options?.drainSequences === true && s.hasSequence !== undefined;
    if (sequences) this.draining.set(key, { model: this.models.get(key) ?? '', scheduler: s });
    try {
      await s.stop({ sequences });
    } finally {
      this.draining.delete(key);
      this.schedulers.delete(key);
      this.models.delete(key);
    }
  }

  pendingCount(key: ModelKey): number {
    return this.schedulers.get(key)?.pendingCount ?? 0;
  }

  /** Requests handed to an instance whose batch has not finished (metrics). */
  inflightCount(key: ModelKey): number {
    return this.schedulers.get(key)?.inflightCount ?? 0;
  }

  /** Whether the key's sequence batcher holds a live sequence `sequenceId`. */
  hasSequence(key: ModelKey, sequenceId: bigint | string): boolean {
    return this.schedulers.get(key)?.hasSequence?.(sequenceId) ?? false;
  }

  /** Slots owned by a sequence, per loaded sequence-batched model version (diagnostics, tests). */
  sequenceSlotsInUse(): Map<ModelKey, number> {
    const inUse = new Map<ModelKey, number>();
    for (const [key, s] of this.schedulers) if (s.sequenceSlotsInUse !== undefined) inUse.set(key, s.sequenceSlotsInUse);
    return inUse;
  }

  async closeAll(): Promise<void> {
    await Promise.allSettled([...this.schedulers.keys()].map((k) => this.close(k)));
  }
}

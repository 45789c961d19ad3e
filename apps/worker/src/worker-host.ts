import type { AutoCompleteContext, BackendRegistry, CustomMetricsPort, InstanceSpec, ModelInstance, ReportExecution } from '@nereid/backends';
import { sumMemoryUsage } from './memory-usage-sum';
import type { ModelConfig, ModelInstanceGroup } from '@nereid/model-config';
import { InferenceError, toInferenceError, type ExecutionItem, type InferenceRequest } from '@nereid/protocol';
import type { ExecuteOptions, ModelKey, WorkerCapacity, WorkerChannel, WorkerLoadSpec, WorkerServices } from '@nereid/transport';

/** `requests`: the requests a model's line is about (their ids go on it); see LoadContext.log. */
export type WorkerLog = (level: 'info' | 'warn' | 'error' | 'verbose', message: string, requests?: readonly InferenceRequest[]) => void;

interface LoadedModel {
  instances: ModelInstance[];
  config: ModelConfig;
  /** Instances that take requests (the first ones; passive instances follow). */
  activeCount: number;
}

/** Instance specs of a config's instance groups, passive instances last (they take no requests). */
export function instanceSpecs(config: ModelConfig): { active: InstanceSpec[]; passive: InstanceSpec[] } {
  const active: InstanceSpec[] = [];
  const passive: InstanceSpec[] = [];
  (config.instance_group ?? []).forEach((g: ModelInstanceGroup, gi: number) => {
    const groupName = g.name || `${config.name}_${gi}`;
    const kind = (g.kind === 'KIND_GPU' || g.kind === 'KIND_MODEL' ? g.kind : 'KIND_CPU') as InstanceSpec['kind'];
    const count = Math.max(0, g.count ?? 1);
    const devices = kind === 'KIND_GPU' ? (g.gpus && g.gpus.length > 0 ? g.gpus : [0]) : [0];
    let n = 0;
    for (const deviceId of devices) {
      for (let i = 0; i < count; i++) {
        (g.passive ? passive : active).push({ name: `${groupName}_${n++}`, kind, deviceId });
      }
    }
  });
  return { active, passive };
}

/**
 * Hosts model instances and runs batches on them. Knows backends, not protocols or transports.
 * Ensembles have no instances (their scheduler sends their steps to their models): none load here.
 */
export class WorkerHost implements WorkerChannel {
  private readonly models = new Map<ModelKey, LoadedModel>();

  constructor(
    private readonly backends: BackendRegistry,
    private readonly services: WorkerServices,
    private readonly log: WorkerLog,
    /** Where backends put their own metrics (python custom metrics); absent: nowhere. */
    private readonly metrics?: CustomMetricsPort,
  ) {}

  async autoComplete(backend: string, ctx: AutoCompleteContext): Promise<ModelConfig> {
    const b = this.backends.get(backend);
    return b.autoComplete ? b.autoComplete(ctx) : ctx.config;
  }

  async load(spec: WorkerLoadSpec): Promise<WorkerCapacity> {
    const { config } = spec;
    const backend = this.backends.get(config.backend ?? '');
    const { active, passive } = instanceSpecs(config);
    const instances: ModelInstance[] = [];
    const modelLog: WorkerLog = (level, message, requests) => this.log(level, `[${config.name}:${spec.version}] ${message}`, requests);
    try {
      for (const instance of [...active, ...passive]) {
        instances.push(
          await backend.loadInstance({
            config,
            modelDir: spec.modelDir,
            versionDir: spec.versionDir,
            version: spec.version,
            instance,
            infer: this.services.infer,
            models: this.services.models,
            log: modelLog,
            metrics: this.metrics,
          }),
        );
      }
    } catch (e) {
      await Promise.allSettled(instances.map((i) => i.unload()));
      throw toInferenceError(e);
    }
    this.models.set(spec.key, { instances, config, activeCount: active.length });
    const depth = instances.slice(0, active.length).reduce((m, i) => Math.min(m, Math.max(1, i.concurrency ?? 1)), 64);
    return { instances: active.length, depth, loaded: instances.length, memoryUsage: sumMemoryUsage(instances.map((i) => i.memoryUsage)) };
  }

  execute(key: ModelKey, instance: number, items: ExecutionItem[], options?: ExecuteOptions): Promise<void> {
    const model = this.models.get(key);
    // Passive instances take no requests; a warmup sample runs on them too.
    const limit = (options?.warmup ? model?.instances.length : model?.activeCount) ?? 0;
    const target = model && instance < limit ? model.instances[instance] : undefined;
    if (!model || !target) {
      const err = InferenceError.unavailable(`no instance ${instance} of '${key}' is loaded`);
      for (const item of items) item.sink.fail(err);
      return Promise.resolve();
    }
    const batched = (model.config.max_batch_size ?? 0) > 0;
    // Each model execution the instance reports: its requests' statistics go back with their
    // responses (the sinks), the execution's to the statistics of the model.
    const report: ReportExecution = (done, stats) => {
      let batchSize = 0;
      let requestCount = 0;
      for (const item of done) {
        item.sink.executed?.(stats);
        // A sequence batcher's padding row (an empty slot) runs with the batch but is no inference.
        if (item.request.padding) continue;
        batchSize += batched ? (item.request.inputs[0]?.shape[0] ?? 1) : 1;
        requestCount++;
      }
      this.services.onBatch({ key, batchSize, requestCount, compute: stats });
    };
    // A promise chain rather than an async function (one microtask fewer per batch).
    let run: Promise<void>;
    try {
      run = target.execute(items, report);
    } catch (e) {
      run = Promise.reject(e);
    }
    return run.catch((e: unknown) => {
      const err = toInferenceError(e);
      for (const item of items) item.sink.fail(err);
    });
  }

  async unload(key: ModelKey): Promise<void> {
    const model = this.models.get(key);
    if (!model) return;
    this.models.delete(key);
    await Promise.allSettled(model.instances.map((i) => i.unload()));
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.models.keys()].map((k) => this.unload(k)));
  }
}

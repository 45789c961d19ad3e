import type { FailureReason } from '@nereid/metrics';
import { checkModelName, ENSEMBLE_PLATFORM, type ModelConfig } from '@nereid/model-config';
import {
  InferenceError,
  nanos,
  toInferenceError,
  type ExecutionItem,
  type ExecutionStats,
  type InferenceRequest,
  type InferenceResponse,
  type ResponseSink,
} from '@nereid/protocol';
import { classify, fromConfigType, type Tensor } from '@nereid/tensor';
import type { BatchReport, SchedulerChannel } from '@nereid/transport';
import type {
  InferenceCore,
  LoadOptions,
  LogSettings,
  ModelMetadata,
  ModelStatistics,
  RepositoryIndexEntry,
  ResponseObserver,
  ServerMetadata,
  TraceSettings,
} from './core';
import { checkLogUpdate } from './log-settings';
import type { LifecycleListener, ModelRepositoryManager, VersionEntry, VersionRuntime } from './model-manager';
import { EnsembleDependencies } from './repository-api-dependencies';
import { validateRequest } from './request-validation';
import { ResponseTimeline } from './statistics';
import type { CoreTrace } from './trace-record';
import { Tracer } from './tracer';

export const SERVER_VERSION = '2.52.0';

/**
 * The extensions server metadata lists: only those that work. `system_shared_memory` is added by
 * extensionsOf with `--allow-client-shm=true`; never listed: `cuda_shared_memory` (no GPU: its
 * registration answers UNSUPPORTED).
 * test/protocol-words.e2e-spec.ts
 * calls an endpoint of each one listed.
 */
export const EXTENSIONS = [
  'classification',
  'sequence',
  'model_repository',
  'model_repository(unload_dependents)',
  'schedule_policy',
  'model_configuration',
  'binary_tensor_data',
  'parameters',
  'statistics',
  'trace',
  'logging',
];

/** The extensions a server lists: EXTENSIONS, with `system_shared_memory` (Triton's place) when client shared memory is on. */
export function extensionsOf(clientSharedMemory: boolean): string[] {
  if (!clientSharedMemory) return EXTENSIONS;
  const at = EXTENSIONS.indexOf('model_configuration') + 1;
  return [...EXTENSIONS.slice(0, at), 'system_shared_memory', ...EXTENSIONS.slice(at)];
}

export interface CoreOptions {
  serverId: string;
  /** `--allow-client-shm`: `system_shared_memory` is listed among the extensions. */
  clientSharedMemory?: boolean;
  controlMode: 'none' | 'explicit' | 'poll';
  strictReadiness: boolean;
  logSettings: LogSettings;
  /** Where the repository API's dependency handling logs (ensembles unloaded with a composing model). */
  log?: (level: 'info' | 'warn' | 'error' | 'verbose', message: string) => void;
  /** `--log-dir`: the directory `log_file` may name a file under through the logging extension. */
  logDir?: string;
  /** The trace extension (`--trace-config`); a tracer with every level OFF when left out. */
  tracer?: Tracer;
}

function now(): number {
  return performance.now();
}

/** The embedded inference core: model lookup, request validation, scheduling, statistics. */
export class NereidCore implements InferenceCore {
  private live = true;
  private ready = false;
  readonly tracer: Tracer;

  constructor(
    private readonly options: CoreOptions,
    private readonly manager: ModelRepositoryManager,
    private readonly scheduler: SchedulerChannel,
  ) {
    this.tracer = options.tracer ?? new Tracer();
  }

  /** Whether any request may be traced now: front doors note arrival times only then. */
  get tracing(): boolean {
    return this.tracer.active;
  }

  /** Server finished start-up (models loaded as the control mode asks). */
  setReady(ready: boolean): void {
    this.ready = ready;
  }

  setLive(live: boolean): void {
    this.live = live;
  }

  serverMetadata(): ServerMetadata {
    return { name: this.options.serverId, version: SERVER_VERSION, extensions: extensionsOf(this.options.clientSharedMemory ?? false) };
  }

  isLive(): boolean {
    return this.live;
  }

  /** Subscribes to the lifecycle events of every model version; returns the function that unsubscribes. */
  onLifecycle(listener: LifecycleListener): () => void {
    return this.manager.onLifecycle(listener);
  }

  isReady(): boolean {
    if (!this.live || !this.ready) return false;
    if (!this.options.strictReadiness) return true;
    for (const entry of this.manager.all()) {
      if (entry.error) return false;
      for (const v of entry.versions.values()) {
        // LOADING and UNLOADING are a reload or an unload under way: the server stays ready.
        if (v.state === 'UNAVAILABLE' && v.reason !== 'unloaded') return false;
      }
    }
    return true;
  }

  /** Finds the version a request addresses; throws Triton's errors for unknown/unready models. */
  resolve(name: string, version: number): VersionRuntime {
    const entry = this.manager.get(name);
    if (!entry) {
      // Only valid names ever get an entry: checking on a miss keeps the hit path free.
      checkModelName(name);
      throw InferenceError.invalidArg(`Request for unknown model: '${name}' is not found`);
    }
    if (version < 0) {
      let best: VersionEntry | undefined;
      for (const v of entry.versions.values()) {
        if (v.state === 'READY' && v.runtime && (!best || v.version > best.version)) best = v;
      }
      if (!best?.runtime) throw InferenceError.notFound(`Request for unknown model: '${name}' has no available versions`);
      return best.runtime;
    }
    const v = entry.versions.get(version);
    if (!v) throw InferenceError.notFound(`Request for unknown model: '${name}' version ${version} is not found`);
    if (v.state !== 'READY' || !v.runtime) {
      throw InferenceError.unavailable(`Request for unknown model: '${name}' version ${version} is not at ready state`);
    }
    return v.runtime;
  }

  isModelReady(name: string, version: number): boolean {
    try {
      this.resolve(name, version);
      return true;
    } catch (e) {
      if (e instanceof InferenceError && e.code === 'INVALID_ARG') throw e;
      return false;
    }
  }

  modelMetadata(name: string, version: number): ModelMetadata {
    const rt = this.resolve(name, version);
    const entry = this.manager.get(name)!;
    const versions =
      version >= 0
        ? [String(version)]
        : [...entry.versions.values()]
            .filter((v) => v.state === 'READY')
            .map((v) => v.version)
            .sort((a, b) => a - b)
            .map(String);
    const cfg = rt.config;
    const batched = (cfg.max_batch_size ?? 0) > 0;
    const tensor = (t: { name?: string; data_type?: string; dims?: number[] }) => ({
      name: t.name ?? '',
      datatype: fromConfigType(t.data_type ?? '') ?? t.data_type ?? '',
      shape: batched ? [-1, ...(t.dims ?? [])] : [...(t.dims ?? [])],
    });
    return {
      name,
      versions,
      platform: cfg.platform || cfg.backend || '',
      inputs: (cfg.input ?? []).map(tensor),
      outputs: (cfg.output ?? []).map(tensor),
    };
  }

  modelConfig(name: string, version: number): ModelConfig {
    return this.resolve(name, version).config;
  }

  isDecoupled(name: string, version: number): boolean {
    return this.resolve(name, version).config.model_transaction_policy?.decoupled === true;
  }

  /** The config of a served model version; undefined when it is not served. For ensembles' steps. */
  servedConfig(name: string, version: number): ModelConfig | undefined {
    try {
      return this.resolve(name, version).config;
    } catch {
      return undefined;
    }
  }

  infer(request: InferenceRequest, observer: ResponseObserver): void {
    let rt: VersionRuntime;
    try {
      rt = this.resolve(request.modelName, request.modelVersion);
      validateRequest(request, rt.config, rt.io);
    } catch (e) {
      observer.onError(toInferenceError(e));
      return;
    }
    const item: ExecutionItem = { request, sink: undefined as unknown as ResponseSink, enqueuedAt: now() };
    // Tracing off: this one test is all a request pays.
    const trace = this.tracer.active ? this.tracer.start(request, request.modelName, rt.stats.version) : undefined;
    item.sink = new CoreSink(rt, item, observer, trace);
    this.scheduler.enqueue(rt.key, item);
  }

  inferOne(request: InferenceRequest): Promise<InferenceResponse> {
    return new Promise((resolve, reject) => {
      let last: InferenceResponse | undefined;
      this.infer(request, {
        onResponse: (r, final) => {
          if (r) last = r;
          if (final) {
            if (last) resolve(last);
            else reject(InferenceError.internal(`model '${request.modelName}' sent no response`));
          }
        },
        onError: reject,
      });
    });
  }

  /** Collects every response (BLS, ensembles, tests). */
  inferAll(request: InferenceRequest, onResponse?: (r: InferenceResponse) => void): Promise<InferenceResponse[]> {
    return new Promise((resolve, reject) => {
      const all: InferenceResponse[] = [];
      this.infer(request, {
        onResponse: (r, final) => {
          if (r) {
            all.push(r);
            onResponse?.(r);
          }
          if (final) resolve(all);
        },
        onError: reject,
      });
    });
  }

  /** Statistics from the worker for one executed batch. */
  onBatch(report: BatchReport): void {
    for (const entry of this.manager.all()) {
      for (const v of entry.versions.values()) {
        if (v.runtime?.key === report.key) {
          v.runtime.stats.recordBatch(report.batchSize, report.compute);
          return;
        }
      }
    }
  }

  repositoryIndex(readyOnly: boolean): Promise<RepositoryIndexEntry[]> {
    return this.manager.index(readyOnly);
  }

  private checkControlMode(): void {
    if (this.options.controlMode !== 'explicit') {
      throw InferenceError.unavailable('explicit model load / unload is not allowed if polling is enabled');
    }
  }

  /** Loads and unloads with Triton's rules between ensembles and their composing models. */
  private deps?: EnsembleDependencies;
  private get dependencies(): EnsembleDependencies {
    return (this.deps ??= new EnsembleDependencies(this.manager, (level, message) => this.options.log?.(level, message)));
  }

  /** Triton refuses repository changes before start-up has finished and once shutdown has begun. */
  private checkStarted(): void {
    if (!this.ready) throw InferenceError.unavailable('Server not ready');
  }

  async loadModel(name: string, options?: LoadOptions): Promise<void> {
    this.checkStarted();
    this.checkControlMode();
    await this.dependencies.load(name, options);
  }

  async unloadModel(name: string, unloadDependents: boolean): Promise<void> {
    this.checkStarted();
    this.checkControlMode();
    await this.dependencies.unload(name, unloadDependents);
  }

  /** Explicit mode's `--load-model=<name>`: loaded as a load request would be, before the server is ready. */
  loadAtStartup(name: string): Promise<void> {
    return this.dependencies.load(name);
  }

  statistics(name: string, version: number): ModelStatistics[] {
    if (!name) {
      const out: ModelStatistics[] = [];
      for (const entry of this.manager.all()) {
        for (const v of [...entry.versions.values()].sort((a, b) => a.version - b.version)) {
          if (v.state === 'READY' && v.runtime) out.push(v.runtime.stats.snapshot());
        }
      }
      return out.sort((a, b) => a.name.localeCompare(b.name));
    }
    const entry = this.manager.get(name);
    if (!entry) checkModelName(name);
    const ready = entry ? [...entry.versions.values()].filter((v) => v.state === 'READY' && v.runtime) : [];
    if (ready.length === 0) throw InferenceError.invalidArg(`requested model '${name}' is not available`);
    if (version >= 0) {
      const v = ready.find((r) => r.version === version);
      if (!v) throw InferenceError.invalidArg(`requested model version is not available for model '${name}'`);
      return [v.runtime!.stats.snapshot()];
    }
    return ready.sort((a, b) => a.version - b.version).map((v) => v.runtime!.stats.snapshot());
  }

  /** The logging extension's settings, after `update` if given (all of it or, when a key is bad, none: see checkLogUpdate). */
  logSettings(update?: Partial<LogSettings>): LogSettings {
    const s = this.options.logSettings;
    if (update) Object.assign(s, checkLogUpdate(update, this.options.logDir));
    return { ...s };
  }

  traceSettings(model: string, update?: Record<string, unknown>): TraceSettings {
    if (model) this.resolve(model, -1);
    return this.tracer.apply(model, update);
  }
}

/** Requested outputs only, in request order; classification applied; id/name/version set. */
function shapeResponse(rt: VersionRuntime, request: InferenceRequest, response: InferenceResponse): InferenceResponse {
  const shaped: InferenceResponse = {
    ...response,
    id: request.id,
    modelName: request.modelName,
    modelVersion: String(rt.stats.version),
  };
  const asked = request.outputs;
  if (!asked) return shaped;
  // Every ensemble step names its outputs: a few of them, found by a scan (a map per response
  // cost more than the scans); a response with many outputs gets its map. Either way the last
  // output of a name is the one taken.
  const given = response.outputs;
  const byName = given.length > 8 ? new Map(given.map((t) => [t.name, t])) : undefined;
  const outputs: Tensor[] = [];
  const batched = (rt.config.max_batch_size ?? 0) > 0;
  for (const o of asked) {
    const t = byName !== undefined ? byName.get(o.name) : lastNamed(given, o.name);
    if (!t) continue;
    outputs.push(o.classification ? classify(t, o.classification, batched, rt.labels.get(o.name)) : t);
  }
  shaped.outputs = outputs;
  return shaped;
}

function lastNamed(tensors: readonly Tensor[], name: string): Tensor | undefined {
  for (let i = tensors.length - 1; i >= 0; i--) if (tensors[i].name === name) return tensors[i];
  return undefined;
}

/**
 * The `reason` a failure counts with (nv_inference_request_failure): OTHER for an ensemble whatever
 * the cause, as Triton's ensemble reports any failure (its composing model's own failure keeps its
 * reason, in that model's statistics); else CANCELED, REJECTED (a queue timeout) or BACKEND, by the
 * error's code (`undefined`: the model's answer could not be shaped, BACKEND).
 */
function failureReason(rt: VersionRuntime, code: InferenceError['code'] | undefined): FailureReason {
  if (rt.config.platform === ENSEMBLE_PLATFORM) return 'OTHER';
  return code === 'CANCELLED' ? 'CANCELED' : code === 'UNAVAILABLE' ? 'REJECTED' : 'BACKEND';
}

/** Inferences in a request: its batch dimension when the model batches, else 1. */
function batchSizeOf(rt: VersionRuntime, request: InferenceRequest): number {
  return (rt.config.max_batch_size ?? 0) > 0 ? (request.inputs[0]?.shape[0] ?? 1) : 1;
}

/**
 * Where a request's responses go once the model answers: shaping, statistics, then the front
 * door's observer. A class rather than two closures per request (one object, monomorphic calls).
 * Statistics as Triton keeps them: a success adds the request's duration at its final response;
 * the instance's report of what the execution cost (queue, compute phases) is added once both
 * are known, whichever comes first, and never for a request that failed.
 */
class CoreSink implements ResponseSink {
  private done = false;
  private succeeded = false;
  /** A response has been sent (the first-response time is recorded once). */
  private responded = false;
  /** Decoupled models: when each response arrived and left, for the statistics' response_stats. */
  private readonly timeline: ResponseTimeline | undefined;
  private stats: ExecutionStats | undefined;

  constructor(
    private readonly rt: VersionRuntime,
    private readonly item: ExecutionItem,
    private readonly observer: ResponseObserver,
    /** The request's trace when it is sampled (see Tracer). */
    private trace: CoreTrace | undefined,
  ) {
    if (rt.config.model_transaction_policy?.decoupled === true) this.timeline = new ResponseTimeline(rt.stats);
  }

  /**
   * The core's part of a trace is done at the final response or error, and, for a model that
   * executes (not an ensemble), once its compute timestamps are known.
   */
  private traceEnd(failed: boolean): void {
    const t = this.trace!;
    t.mark('REQUEST_END');
    if (failed || this.stats !== undefined || this.rt.config.platform === ENSEMBLE_PLATFORM) {
      this.trace = undefined;
      t.release();
    }
  }

  send(response: InferenceResponse | undefined, final: boolean): void {
    if (this.done) return;
    const { rt, item } = this;
    const arrived = this.timeline !== undefined ? now() : 0;
    let out = response;
    if (out) {
      try {
        out = shapeResponse(rt, item.request, out);
      } catch (e) {
        this.done = true;
        rt.stats.recordFailure(nanos(now() - item.enqueuedAt!), failureReason(rt, undefined));
        if (this.trace !== undefined) this.traceEnd(true);
        this.observer.onError(toInferenceError(e));
        return;
      }
    }
    const end = now();
    if (final) this.done = true;
    // Triton's first-response histogram: the first response that carries one (decoupled models send several).
    if (out && !this.responded) {
      this.responded = true;
      rt.stats.recordFirstResponse(nanos(end - item.enqueuedAt!));
    }
    if (this.trace !== undefined) {
      if (out) {
        this.trace.mark('INFER_RESPONSE_COMPLETE', end);
        this.trace.tensors('TENSOR_BACKEND_OUTPUT', out.outputs);
      }
      if (final) this.traceEnd(false);
    }
    // The front door encodes the response here (JSON, protobuf): when that throws (an FP16 output
    // asked for as JSON, BYTES that are not UTF-8) the client must still get an answer, and the
    // request counts as failed. Thrown on, the error would land in the backend, which has no
    // client to tell, and the request would hang.
    try {
      this.observer.onResponse(out, final);
    } catch (e) {
      this.done = true;
      this.timeline?.add(arrived, now(), 'fail');
      rt.stats.recordFailure(nanos(end - item.enqueuedAt!), 'OTHER');
      this.observer.onError(toInferenceError(e));
      return;
    }
    if (this.timeline !== undefined && (out || final)) this.timeline.add(arrived, now(), out ? 'success' : 'empty');
    if (final) {
      rt.stats.recordSuccess(nanos(end - item.enqueuedAt!), batchSizeOf(rt, item.request));
      this.succeeded = true;
      if (this.stats) this.recordExecution(this.stats);
    }
  }

  executed(stats: ExecutionStats): void {
    if (this.stats !== undefined) return;
    this.stats = stats;
    this.timeline?.start(stats.execStart + stats.inputNs / 1e6);
    if (this.trace !== undefined) {
      // An ensemble computes nothing itself (Triton's ensemble traces have no COMPUTE_*): its steps' traces hold their compute.
      if (this.rt.config.platform !== 'ensemble') this.trace.computed(stats);
      if (this.done) {
        this.trace.release();
        this.trace = undefined;
      }
    }
    if (this.succeeded) this.recordExecution(stats);
  }

  private recordExecution(stats: ExecutionStats): void {
    const { rt, item } = this;
    rt.stats.recordExecution(nanos(stats.execStart - item.enqueuedAt!), stats);
    // An ensemble's step: the ensemble reports its steps' compute time as its own.
    this.observer.onExecuted?.(stats);
  }

  fail(error: InferenceError): void {
    if (this.done) return;
    this.done = true;
    this.rt.stats.recordFailure(nanos(now() - this.item.enqueuedAt!), failureReason(this.rt, error.code));
    if (this.timeline !== undefined) {
      const at = now();
      this.timeline.add(at, at, error.code === 'CANCELLED' ? 'cancel' : 'fail');
    }
    if (this.trace !== undefined) this.traceEnd(true);
    this.observer.onError(error);
  }
}

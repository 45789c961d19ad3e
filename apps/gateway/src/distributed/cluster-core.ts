import type {
  InferenceCore, LoadOptions, LogSettings, ModelMetadata, ModelRepositoryManager, ModelStatistics, NereidCore,
  RepositoryIndexEntry, ResponseObserver, ServerMetadata, TraceSettings,
} from '@nereid/core';
import type { ModelConfig } from '@nereid/model-config';
import { InferenceError, type InferenceRequest, type InferenceResponse } from '@nereid/protocol';
import { controlFilesFromWire, controlFilesToWire, type ControlMessage } from '@nereid/transport';
import type { ControlAnswers, ControlClient, ControlHandler } from './cluster-control';
import { mergeIndex, sumAll } from './cluster-sums';

export interface ClusterCoreOptions {
  controlMode: 'none' | 'explicit' | 'poll';
  strictReadiness: boolean;
  /** How long a load waits for the workers (they load the model). */
  loadTimeoutMs: number;
  /** How long statistics and the index wait for every live process's answer. */
  queryTimeoutMs: number;
  log: (level: 'info' | 'warn' | 'error' | 'verbose', message: string) => void;
}

/** Which versions a live worker serves (ClusterWatch), read again at once after a load. */
export interface ServedVersions {
  serves(name: string, version: number): boolean;
  refresh(): Promise<void>;
}

/** How often a scheduler reads the cluster's table (apps/scheduler's refresh). */
const SCHEDULER_REFRESH_MS = 500;

/** A load's options as a control message carries them, back to the core's form. */
export function loadOptionsOf(m: ControlMessage): LoadOptions | undefined {
  if (m.config === undefined && m.files === undefined) return undefined;
  return { config: m.config, files: controlFilesFromWire(m.files) };
}

/** The first answer's error when every member that answered failed. */
function failureOf(answers: ControlAnswers): InferenceError | undefined {
  if (answers.replies.length === 0 || answers.replies.some((r) => !r.error)) return undefined;
  const e = answers.replies[0].error!;
  return new InferenceError(e.code, e.message);
}

/**
 * A gateway's core in distributed mode: the embedded core (`local`: validation, ensembles, the
 * request path) with the control plane made cluster-wide.
 *
 * - A model version is ready while this gateway has it READY and a live worker serves it
 *   (ensembles: while this gateway has it READY); with strict readiness the server is ready while
 *   every READY version is.
 * - Load (explicit mode): the workers load first (each through its own core; the load fails with
 *   a worker's words when every worker failed), then this gateway and the other gateways.
 *   Unload: the gateways first (each drains the requests it holds), then the workers.
 * - Statistics: this gateway's own, plus every live worker's and gateway's, summed.
 * - The index: this gateway's rows with the workers' states and reasons merged in (cluster-sums.ts).
 */
export class ClusterCore implements InferenceCore {
  constructor(
    private readonly local: NereidCore,
    private readonly manager: ModelRepositoryManager,
    private readonly control: ControlClient,
    /** Whether a live worker serves a version (ClusterWatch). */
    private readonly watch: ServedVersions,
    private readonly options: ClusterCoreOptions,
  ) {}

  get tracing(): boolean {
    return this.local.tracing;
  }

  serverMetadata(): ServerMetadata {
    return this.local.serverMetadata();
  }

  isLive(): boolean {
    return this.local.isLive();
  }

  /** Whether requests for the version can run: an ensemble's steps are checked when they run. */
  private served(name: string, version: number): boolean {
    const config = this.manager.get(name)?.versions.get(version)?.runtime?.config;
    return config?.platform === 'ensemble' || this.watch.serves(name, version);
  }

  isReady(): boolean {
    if (!this.local.isReady()) return false;
    if (!this.options.strictReadiness) return true;
    for (const entry of this.manager.all()) {
      for (const v of entry.versions.values()) if (v.state === 'READY' && !this.served(entry.name, v.version)) return false;
    }
    return true;
  }

  isModelReady(name: string, version: number): boolean {
    if (!this.local.isModelReady(name, version)) return false;
    return this.served(name, Number(this.local.resolve(name, version).stats.version));
  }

  modelMetadata(name: string, version: number): ModelMetadata {
    return this.local.modelMetadata(name, version);
  }

  modelConfig(name: string, version: number): ModelConfig {
    return this.local.modelConfig(name, version);
  }

  isDecoupled(name: string, version: number): boolean {
    return this.local.isDecoupled(name, version);
  }

  infer(request: InferenceRequest, observer: ResponseObserver): void {
    this.local.infer(request, observer);
  }

  inferOne(request: InferenceRequest): Promise<InferenceResponse> {
    return this.local.inferOne(request);
  }

  logSettings(update?: Partial<LogSettings>): LogSettings {
    return this.local.logSettings(update);
  }

  traceSettings(model: string, update?: Record<string, unknown>): TraceSettings {
    return this.local.traceSettings(model, update);
  }

  private noteMissing(what: string, answers: ControlAnswers): void {
    if (answers.missing.length > 0) {
      this.options.log('warn', `${what}: no answer within the timeout from ${answers.missing.join(', ')} (left out)`);
    }
  }

  async statistics(name: string, version: number): Promise<ModelStatistics[]> {
    // This gateway's answer first: it decides which versions there are, and Triton's errors for the others.
    const own = this.local.statistics(name, version);
    const answers = await this.control.ask({ op: 'stats', model: name, version }, this.options.queryTimeoutMs);
    this.noteMissing(`statistics of '${name || '*'}'`, answers);
    return sumAll(own, answers.replies.map((r) => (r.stats ?? []) as unknown as ModelStatistics[]));
  }

  async repositoryIndex(readyOnly: boolean): Promise<RepositoryIndexEntry[]> {
    const own = await this.local.repositoryIndex(false);
    const answers = await this.control.ask({ op: 'index', model: '', to: 'worker' }, this.options.queryTimeoutMs);
    this.noteMissing('repository index', answers);
    const merged = mergeIndex(own, answers.replies.map((r) => (r.index ?? []) as RepositoryIndexEntry[]), (n, v) => this.served(n, v));
    return readyOnly ? merged.filter((r) => r.state === 'READY') : merged;
  }

  async loadModel(name: string, options?: LoadOptions): Promise<void> {
    // Outside explicit mode (or before start-up ends) the local core refuses, with Triton's words.
    if (this.options.controlMode !== 'explicit') return this.local.loadModel(name, options);
    const question = { op: 'load' as const, model: name, config: options?.config, files: controlFilesToWire(options?.files) };
    const workers = await this.control.ask({ ...question, to: 'worker' }, this.options.loadTimeoutMs);
    this.noteMissing(`load of '${name}'`, workers);
    if (workers.replies.length === 0) {
      throw InferenceError.unavailable(`failed to load '${name}', no live worker of the cluster answered`);
    }
    const failure = failureOf(workers);
    if (failure) throw failure;
    for (const r of workers.replies) if (r.error) this.options.log('warn', `load of '${name}' failed on ${r.member}: ${r.error.message}`);
    // Schedulers see the workers' new entries when they next read the cluster's table: the answer waits that long.
    const schedulersSee = new Promise((r) => setTimeout(r, SCHEDULER_REFRESH_MS + 100));
    await this.watch.refresh();
    await this.local.loadModel(name, options);
    const [gateways] = await Promise.all([this.control.ask({ ...question, to: 'gateway' }, this.options.loadTimeoutMs), schedulersSee]);
    this.noteMissing(`load of '${name}'`, gateways);
    for (const r of gateways.replies) if (r.error) this.options.log('warn', `load of '${name}' failed on ${r.member}: ${r.error.message}`);
  }

  async unloadModel(name: string, unloadDependents: boolean): Promise<void> {
    if (this.options.controlMode !== 'explicit') return this.local.unloadModel(name, unloadDependents);
    await this.local.unloadModel(name, unloadDependents);
    for (const to of ['gateway', 'worker'] as const) {
      const answers = await this.control.ask({ op: 'unload', model: name, unloadDependents, to }, this.options.loadTimeoutMs);
      this.noteMissing(`unload of '${name}'`, answers);
      for (const r of answers.replies) if (r.error) this.options.log('warn', `unload of '${name}' failed on ${r.member}: ${r.error.message}`);
    }
  }
}

/**
 * How a gateway answers the other gateways' questions: loads and unloads in its own core (the
 * workers have loaded, or the gateways unload first), its own statistics.
 */
export function gatewayControlHandler(local: NereidCore, watch: ServedVersions): ControlHandler {
  return async (m) => {
    switch (m.op) {
      case 'load':
        await watch.refresh();
        return local.loadModel(m.model, loadOptionsOf(m));
      case 'unload':
        return local.unloadModel(m.model, m.unloadDependents === true);
      case 'stats':
        return { stats: ownStatistics(local, m) };
      case 'index':
        return { index: await local.repositoryIndex(false) };
    }
  };
}

/** A process's own statistics for a question; none (rather than an error) when it does not serve the model. */
export function ownStatistics(core: Pick<NereidCore, 'statistics'>, m: ControlMessage): Array<Record<string, unknown>> {
  try {
    return core.statistics(m.model, m.version ?? -1) as unknown as Array<Record<string, unknown>>;
  } catch {
    return [];
  }
}

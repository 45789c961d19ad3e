import { promises as fs } from 'node:fs';
import type { BackendRegistry } from '@nereid/backends';
import { checkModelName, ENSEMBLE_PLATFORM, resolveInside, type ModelConfig } from '@nereid/model-config';
import { InferenceError, toInferenceError } from '@nereid/protocol';
import { listVersions, scanRepositories, selectVersions, versionDir, type ModelLocation } from '@nereid/repository';
import type { StatsObserverFactory } from '@nereid/metrics';
import type { SchedulerChannel, WorkerChannel } from '@nereid/transport';
import { completeModelConfig, type ConfigOptions } from './config-pipeline';
import type { LoadOptions, ModelState, RepositoryIndexEntry } from './core';
import { LifecycleEvents, type LifecycleListener, type LifecycleState } from './lifecycle';
import { folderFingerprint, versionSource } from './lifecycle-sources';
import { removeOverrideFolder, writeOverrideFolder } from './override-files';
import { modelIo, type ModelIo } from './request-validation';
import { hideServerPaths, type ShownPath } from './server-paths';
import { ModelStatsRecorder } from './statistics';
import { buildWarmupSamples, runWarmup } from './warmup';

export type { LifecycleEvent, LifecycleListener, LifecycleState } from './lifecycle';

/** One loaded (or attempted) version of a model. */
export interface VersionEntry {
  version: number;
  state: ModelState;
  reason: string;
  /** Present while READY (and while draining). */
  runtime?: VersionRuntime;
}

export interface VersionRuntime {
  key: string;
  config: ModelConfig;
  io: ModelIo;
  stats: ModelStatsRecorder;
  /** Output name → labels from `label_filename`. */
  labels: Map<string, string[]>;
  /** How long the load took, in seconds. */
  loadSecs: number;
  /** The override folder (load with `file:` parameters) this version runs from; deleted once no version uses it. */
  overrideRoot?: string;
  /**
   * What this runtime was loaded from (its config, the model folder's shared files, its version
   * folder's files); a reload whose version has the same source keeps the runtime. Absent for
   * loads with overrides (always reloaded).
   */
  source?: string;
}

export interface ModelEntry {
  name: string;
  versions: Map<number, VersionEntry>;
  /** Error that kept any version from loading (config errors, duplicates). */
  error?: string;
  fingerprint?: string;
  /**
   * Fingerprint of the model folder at the last load attempt, whatever its outcome: poll mode
   * tries a model again only once its files differ from this.
   */
  attempted?: string;
  overridden?: boolean;
  /** Models loaded because this one (an ensemble) needs them. */
  dependents?: string[];
}

export interface ManagerOptions extends ConfigOptions {
  repositories: string[];
  /** Brings cloud repositories' local copies up to date and returns the local paths to scan (default: `repositories`). */
  prepareRepositories?: () => Promise<string[]>;
  /**
   * Cloud repositories' local cache folders and their URLs: every message stored as a reason,
   * answered or logged names the URL (`s3://bucket/path/m/config.pbtxt`), never the cache folder.
   */
  shownPaths?: readonly ShownPath[];
  /** `--allow-model-file-overrides`: loads may carry model files (`file:` parameters). Default false. */
  allowFileOverrides?: boolean;
  /**
   * The largest warmup sample in bytes, its batch included (`--http-max-input-size`: a sample holds
   * no more than a client's request may). Default DEFAULT_MAX_WARMUP_BYTES (64 MiB).
   */
  maxInputBytes?: number;
  /** Makes each loaded version's metrics observer (histograms, summaries; the config's `model_metrics` sets their buckets); default none. */
  statsObserver?: StatsObserverFactory;
  log: (level: 'info' | 'warn' | 'error' | 'verbose', message: string) => void;
}

/** A load with `file:` parameters while the server was not started to allow them. */
const FILE_OVERRIDES_DISABLED = (): InferenceError =>
  InferenceError.invalidArg(
    "model file overrides are disabled: 'file:' load parameters write files the server then runs. Start the server with '--allow-model-file-overrides=true' to allow them.",
  );

const DUPLICATE_REASON = 'model appears in two or more repositories';

/**
 * Loads, reloads and unloads models; owns every model version's state. A reload brings the new
 * versions up first and swaps them in, then drains and unloads the old ones: no request is dropped.
 */
export class ModelRepositoryManager {
  private readonly entries = new Map<string, ModelEntry>();
  private readonly locks = new Map<string, Promise<unknown>>();
  private generation = 0;
  private readonly lifecycle: LifecycleEvents;

  constructor(
    private readonly options: ManagerOptions,
    private readonly backends: BackendRegistry,
    private readonly scheduler: SchedulerChannel,
    private readonly worker: WorkerChannel,
  ) {
    this.lifecycle = new LifecycleEvents((e) => options.log('error', `lifecycle listener failed: ${(e as Error).message}`));
  }

  get(name: string): ModelEntry | undefined {
    return this.entries.get(name);
  }

  all(): ModelEntry[] {
    return [...this.entries.values()];
  }

  /** Names of every model directory in the repositories. */
  async scan(): Promise<{ models: Map<string, ModelLocation>; duplicates: Set<string> }> {
    const prepare = this.options.prepareRepositories;
    try {
      return await scanRepositories(prepare ? await prepare() : this.options.repositories);
    } catch (e) {
      throw this.hidden(e);
    }
  }

  /** `message` without server folders: cloud caches shown as their URLs, an override folder as nothing. */
  private shown(message: string, overrideRoot?: string): string {
    const paths = [...(this.options.shownPaths ?? [])];
    if (overrideRoot !== undefined) paths.push({ local: overrideRoot, shown: '' });
    return hideServerPaths(message, paths);
  }

  /** An error as an InferenceError whose message shows no server folder. */
  private hidden(e: unknown, overrideRoot?: string): InferenceError {
    const err = toInferenceError(e);
    const message = this.shown(err.message, overrideRoot);
    return message === err.message ? err : new InferenceError(err.code, message);
  }

  /**
   * Whether a model folder's files differ from those of the model's last load attempt (poll mode
   * loads only those: a model whose load failed is tried again once its files change).
   */
  async changedSinceAttempt(location: ModelLocation): Promise<boolean> {
    const attempted = this.entries.get(location.name)?.attempted;
    return attempted === undefined || attempted !== (await folderFingerprint(location.path)).all;
  }

  /** Serializes operations on one model. */
  private withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(name) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const settled = next.catch(() => undefined);
    this.locks.set(name, settled);
    void settled.then(() => {
      if (this.locks.get(name) === settled) this.locks.delete(name);
    });
    return next;
  }

  /** Loads (or reloads) a model. Rejects with the reason when no version could be loaded. */
  async load(name: string, options: LoadOptions = {}): Promise<void> {
    checkModelName(name);
    return this.withLock(name, () => this.doLoad(name, options)).catch((e: unknown) => {
      throw this.hidden(e);
    });
  }

  private entry(name: string): ModelEntry {
    let e = this.entries.get(name);
    if (!e) {
      e = { name, versions: new Map() };
      this.entries.set(name, e);
    }
    return e;
  }

  private async doLoad(name: string, options: LoadOptions): Promise<void> {
    const files = options.files ?? new Map<string, Uint8Array>();
    if (files.size > 0 && !this.options.allowFileOverrides) throw FILE_OVERRIDES_DISABLED();
    if (files.size > 0 && options.config === undefined) {
      throw InferenceError.invalidArg("Load parameter 'config' must be specified for model file override");
    }
    const { models, duplicates } = await this.scan();
    if (duplicates.has(name)) {
      const e = this.entry(name);
      e.error = DUPLICATE_REASON;
      throw InferenceError.invalidArg(`failed to load '${name}', ${DUPLICATE_REASON}`);
    }
    if (files.size === 0) {
      const location = models.get(name);
      if (!location) throw InferenceError.invalidArg(`failed to load '${name}', failed to poll from model repository`);
      return this.loadFrom(name, location, options);
    }
    const location = await writeOverrideFolder(name, files, (message) => this.options.log('error', message));
    const root = location.repository;
    try {
      await this.loadFrom(name, location, options, root);
    } catch (e) {
      throw this.hidden(e, root);
    } finally {
      await this.removeUnusedOverrides(name, [root]);
    }
  }

  /** Override folders no version of `name` runs from any more are deleted. */
  private async removeUnusedOverrides(name: string, roots: readonly (string | undefined)[]): Promise<void> {
    const used = new Set<string>();
    for (const v of this.entries.get(name)?.versions.values() ?? []) {
      if (v.runtime?.overrideRoot) used.add(v.runtime.overrideRoot);
    }
    for (const root of new Set(roots)) {
      if (root !== undefined && !used.has(root)) await removeOverrideFolder(root);
    }
  }

  private async loadFrom(name: string, location: ModelLocation, options: LoadOptions, overrideRoot?: string): Promise<void> {
    // Messages stored as reasons (repository index) and logged never show a server folder.
    const hide = (message: string): string => this.shown(message, overrideRoot);
    const entry = this.entry(name);
    const files = await folderFingerprint(location.path);
    const fp = files.all;
    if (!overrideRoot) entry.attempted = fp;
    const unchanged =
      options.config === undefined && !entry.overridden && entry.fingerprint === fp && !entry.error &&
      [...entry.versions.values()].some((v) => v.state === 'READY');
    if (unchanged) return;

    let completed;
    try {
      completed = await completeModelConfig(location, this.backends, this.worker, this.options, options.config);
    } catch (e) {
      const message = hide(toInferenceError(e).message);
      if (!this.serving(entry)) {
        entry.error = message;
        this.markFailed(entry, await this.versionsOnDiskSafe(location), message);
      }
      this.options.log('error', `failed to load '${name}': ${message}`);
      throw InferenceError.invalidArg(`failed to load '${name}', ${message}`);
    }
    const { config, versionsOnDisk } = completed;
    const { versions: wanted, missing } = selectVersions(config.version_policy, versionsOnDisk);
    for (const v of missing) this.options.log('error', `version ${v} of model '${name}' is not present in the repository`);
    if (wanted.length === 0) {
      const reason = `at least one version must be available under the version policy of model '${name}'`;
      if (!this.serving(entry)) entry.error = reason;
      this.options.log('error', `failed to load '${name}': ${reason}`);
      throw InferenceError.invalidArg(`failed to load '${name}', ${reason}`);
    }
    const labels = await this.readLabels(location, config);
    // Versions whose config and files are what their serving runtime was loaded from keep it.
    const reusable = options.config === undefined && !entry.overridden && overrideRoot === undefined;
    const configText = JSON.stringify(config);
    const toLoad: { version: number; source?: string }[] = [];
    const kept: number[] = [];
    for (const v of wanted) {
      const source = reusable ? versionSource(configText, files, v) : undefined;
      const prev = entry.versions.get(v);
      if (source !== undefined && prev?.state === 'READY' && prev.runtime?.source === source) kept.push(v);
      else toLoad.push({ version: v, source });
    }
    const results = await Promise.all(
      toLoad.map((t) => this.loadVersion(entry, location, config, t.version, labels, overrideRoot, hide, t.source)),
    );
    const retired = this.commit(entry, results, wanted);
    const failures = results.filter((r) => r.state !== 'READY').map((r) => `version ${r.version}: ${r.reason}`);
    if (results.some((r) => r.state === 'READY') || kept.length > 0) {
      entry.error = undefined;
      entry.overridden = options.config !== undefined;
    } else if (!this.serving(entry)) entry.error = failures.join('; ');
    // A load that failed in part is tried again on the next load request, even with the same files.
    entry.fingerprint = failures.length === 0 ? fp : undefined;
    // Another version serves: sequences that live on a retired runtime finish there.
    const drainSequences = this.serving(entry);
    await Promise.all(retired.map((v) => this.retire(entry, v, drainSequences)));
    await this.removeUnusedOverrides(name, retired.map((v) => v.runtime?.overrideRoot));
    if (failures.length > 0) {
      throw InferenceError.invalidArg(`failed to load '${name}', ${failures.join('; ')}`);
    }
    this.options.log('info', `successfully loaded '${name}' version${wanted.length > 1 ? 's' : ''} ${wanted.join(', ')}`);
  }

  /** Whether a version of the model serves requests. */
  private serving(entry: ModelEntry): boolean {
    return [...entry.versions.values()].some((v) => v.state === 'READY');
  }

  /**
   * Switches traffic to the versions that loaded, all at once (no await): each READY result
   * replaces its version; a failed one leaves a serving version of its number in place, or is
   * recorded UNAVAILABLE with its reason. Serving versions the policy no longer wants are retired
   * only as far as their replacements came up: for each wanted version that failed and had nothing
   * serving, the newest of them keeps serving. Returns the versions to drain and unload.
   */
  private commit(entry: ModelEntry, results: VersionEntry[], wanted: number[]): VersionEntry[] {
    const retired: VersionEntry[] = [];
    let missingReplacements = 0;
    for (const r of results) {
      const prev = entry.versions.get(r.version);
      const prevServing = prev?.state === 'READY' && prev.runtime !== undefined;
      if (r.state === 'READY' && r.runtime) {
        entry.versions.set(r.version, r);
        this.announce(entry.name, r.version, 'READY', '', r.runtime.key);
        if (prevServing) retired.push(prev);
      } else if (!prevServing) {
        entry.versions.set(r.version, r);
        missingReplacements++;
      } else {
        this.options.log('warn', `version ${r.version} of '${entry.name}' keeps serving: its reload failed`);
      }
    }
    const stale = [...entry.versions.values()]
      .filter((v) => !wanted.includes(v.version))
      .sort((a, b) => b.version - a.version);
    for (const v of stale) {
      if (v.state === 'READY' && v.runtime) {
        if (missingReplacements > 0) {
          missingReplacements--;
          this.options.log('warn', `version ${v.version} of '${entry.name}' keeps serving: a version meant to replace it failed to load`);
          continue;
        }
        retired.push(v);
      } else if (v.state !== 'UNLOADING') {
        entry.versions.set(v.version, { version: v.version, state: 'UNAVAILABLE', reason: 'unloaded' });
      }
    }
    return retired;
  }

  /** Emits one lifecycle event. */
  private announce(model: string, version: number, state: LifecycleState, reason: string, key?: string): void {
    this.lifecycle.emit(key === undefined ? { model, version, state, reason } : { model, version, state, reason, key });
  }

  /** Subscribes to every version's lifecycle events; returns the function that unsubscribes. */
  onLifecycle(listener: LifecycleListener): () => void {
    return this.lifecycle.on(listener);
  }

  private async versionsOnDiskSafe(location: ModelLocation): Promise<number[]> {
    return listVersions(location.path).catch(() => []);
  }

  private markFailed(entry: ModelEntry, versions: number[], reason: string): void {
    for (const v of versions) {
      const prev = entry.versions.get(v);
      if (prev?.state === 'READY' || prev?.state === 'UNLOADING') continue;
      entry.versions.set(v, { version: v, state: 'UNAVAILABLE', reason });
      this.announce(entry.name, v, 'UNAVAILABLE', reason);
    }
  }

  private async loadVersion(
    entry: ModelEntry,
    location: ModelLocation,
    config: ModelConfig,
    version: number,
    labels: Map<string, string[]>,
    overrideRoot: string | undefined,
    hide: (message: string) => string,
    source: string | undefined,
  ): Promise<VersionEntry> {
    const key = `${config.name}/${version}/${++this.generation}`;
    const started = performance.now();
    // The index shows LOADING unless a runtime of this version serves meanwhile.
    const prev = entry.versions.get(version);
    if (prev?.state !== 'READY' && prev?.state !== 'UNLOADING') entry.versions.set(version, { version, state: 'LOADING', reason: '' });
    this.announce(entry.name, version, 'LOADING', '', key);
    let loaded = false;
    try {
      const modelDir = location.path;
      // Built before the instances load: a warmup data file that is missing fails the load early.
      const samples = await buildWarmupSamples(config, modelDir, this.options.maxInputBytes);
      // An ensemble has no instances: its scheduler sends its steps to their models.
      const capacity =
        config.platform === ENSEMBLE_PLATFORM
          ? { instances: 0, depth: 1 }
          : await this.worker.load({ key, config, modelDir, versionDir: await versionDir(modelDir, version), version });
      loaded = true;
      await runWarmup(this.worker, key, config, samples, capacity.loaded ?? capacity.instances);
      this.scheduler.open(key, config, capacity, modelDir);
      const runtime: VersionRuntime = {
        key,
        config,
        io: modelIo(config),
        stats: new ModelStatsRecorder(
          config.name ?? location.name,
          version,
          this.options.statsObserver?.(config.name ?? location.name, version, config.model_metrics, config.model_transaction_policy?.decoupled === true),
          capacity.memoryUsage,
        ),
        labels,
        loadSecs: (performance.now() - started) / 1000,
        overrideRoot,
        source,
      };
      return { version, state: 'READY', reason: '', runtime };
    } catch (e) {
      if (loaded) await this.worker.unload(key).catch(() => undefined);
      const message = hide(toInferenceError(e).message);
      this.options.log('error', `failed to load '${location.name}' version ${version}: ${message}`);
      this.announce(entry.name, version, 'UNAVAILABLE', message, key);
      return { version, state: 'UNAVAILABLE', reason: message };
    }
  }

  /** Labels of the outputs with a `label_filename`; the files must lie inside the model folder. */
  private async readLabels(location: ModelLocation, config: ModelConfig): Promise<Map<string, string[]>> {
    const labels = new Map<string, string[]>();
    for (const o of config.output ?? []) {
      if (!o.label_filename) continue;
      const what = `label file path '${o.label_filename}' for output '${o.name ?? ''}' in model '${location.name}'`;
      const file = await resolveInside(location.path, o.label_filename, what);
      const text = await fs.readFile(file, 'utf8').catch(() => undefined);
      if (text !== undefined) labels.set(o.name ?? '', text.split(/\r?\n/));
    }
    return labels;
  }

  /**
   * Stops routing to a version's runtime, waits for its requests (and, with `drainSequences`, for
   * its live sequences), frees its instances. A version that no runtime replaced shows UNLOADING
   * meanwhile, then 'unloaded'.
   */
  private async retire(entry: ModelEntry, v: VersionEntry, drainSequences = false): Promise<void> {
    const runtime = v.runtime!;
    const replaced = entry.versions.get(v.version) !== v;
    if (!replaced) entry.versions.set(v.version, { ...v, state: 'UNLOADING', reason: '' });
    this.announce(entry.name, v.version, 'UNLOADING', '', runtime.key);
    await this.scheduler.close(runtime.key, { drainSequences });
    await this.worker.unload(runtime.key);
    const current = entry.versions.get(v.version);
    if (!replaced && current?.state === 'UNLOADING' && current.runtime === runtime) {
      entry.versions.set(v.version, { version: v.version, state: 'UNAVAILABLE', reason: 'unloaded' });
    }
    this.announce(entry.name, v.version, 'UNAVAILABLE', 'unloaded', runtime.key);
  }

  /**
   * Records a load refused before any version was tried (an ensemble whose composing model failed
   * to load): unless a version serves, the model's versions in the repository (or the model, when
   * none is found) show UNAVAILABLE with the reason, as Triton's index shows them.
   */
  async refuse(name: string, reason: string): Promise<void> {
    checkModelName(name);
    return this.withLock(name, async () => {
      const entry = this.entry(name);
      if (this.serving(entry)) return;
      const message = this.shown(reason);
      const location = (await this.scan().catch(() => undefined))?.models.get(name);
      entry.error = message;
      this.markFailed(entry, location ? await this.versionsOnDiskSafe(location) : [], message);
      this.options.log('error', `failed to load '${name}': ${message}`);
    });
  }

  async unload(name: string): Promise<void> {
    checkModelName(name);
    return this.withLock(name, async () => {
      const entry = this.entries.get(name);
      if (!entry) return;
      const retired: VersionEntry[] = [];
      for (const v of [...entry.versions.values()]) {
        if (v.state === 'READY' && v.runtime) retired.push(v);
        else if (v.state !== 'UNLOADING') entry.versions.set(v.version, { version: v.version, state: 'UNAVAILABLE', reason: 'unloaded' });
      }
      entry.error = undefined;
      entry.fingerprint = undefined;
      entry.attempted = undefined;
      await Promise.all(retired.map((v) => this.retire(entry, v)));
      await this.removeUnusedOverrides(name, retired.map((v) => v.runtime?.overrideRoot));
      this.options.log('info', `successfully unloaded '${name}'`);
    });
  }

  async unloadAll(): Promise<void> {
    await Promise.all([...this.entries.keys()].map((n) => this.unload(n)));
  }

  /** Repository index: every model in the repositories plus every model ever loaded. */
  async index(readyOnly: boolean): Promise<RepositoryIndexEntry[]> {
    const { models, duplicates } = await this.scan();
    const names = new Set<string>([...models.keys(), ...duplicates, ...this.entries.keys()]);
    const out: RepositoryIndexEntry[] = [];
    for (const name of [...names].sort()) {
      const entry = this.entries.get(name);
      if (duplicates.has(name)) {
        if (!readyOnly) out.push({ name, state: 'UNAVAILABLE', reason: DUPLICATE_REASON });
        continue;
      }
      if (!entry || (entry.versions.size === 0 && !entry.error)) {
        if (!readyOnly) out.push({ name });
        continue;
      }
      if (entry.versions.size === 0) {
        if (!readyOnly) out.push({ name, state: 'UNAVAILABLE', reason: entry.error });
        continue;
      }
      for (const v of [...entry.versions.values()].sort((a, b) => a.version - b.version)) {
        if (readyOnly && v.state !== 'READY') continue;
        const row: RepositoryIndexEntry = { name, version: String(v.version), state: v.state };
        if (v.reason) row.reason = v.reason;
        out.push(row);
      }
    }
    return out;
  }
}

import { promises as fs } from 'node:fs';
import type { BackendRegistry } from '@nereid/backends';
import { checkModelName, ENSEMBLE_PLATFORM, resolveInside, type ModelConfig } from '@nereid/model-config';
import { InferenceError, toInferenceError } from '@nereid/protocol';
import { fingerprint, listVersions, scanRepositories, selectVersions, versionDir, type ModelLocation } from '@nereid/repository';
import type { SchedulerChannel, WorkerChannel } from '@nereid/transport';
import { completeModelConfig, type ConfigOptions } from './config-pipeline';
import type { LoadOptions, ModelState, RepositoryIndexEntry } from './core';
import { hideOverrideFolder, removeOverrideFolder, writeOverrideFolder } from './override-files';
import { modelIo, type ModelIo } from './request-validation';
import { ModelStatsRecorder } from './statistics';

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
}

export interface ModelEntry {
  name: string;
  versions: Map<number, VersionEntry>;
  /** Error that kept any version from loading (config errors, duplicates). */
  error?: string;
  fingerprint?: string;
  overridden?: boolean;
  /** Models loaded because this one (an ensemble) needs them. */
  dependents?: string[];
}

export interface ManagerOptions extends ConfigOptions {
  repositories: string[];
  /** `--allow-model-file-overrides`: loads may carry model files (`file:` parameters). Default false. */
  allowFileOverrides?: boolean;
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

  constructor(
    private readonly options: ManagerOptions,
    private readonly backends: BackendRegistry,
    private readonly scheduler: SchedulerChannel,
    private readonly worker: WorkerChannel,
  ) {}

  get(name: string): ModelEntry | undefined {
    return this.entries.get(name);
  }

  all(): ModelEntry[] {
    return [...this.entries.values()];
  }

  /** Names of every model directory in the repositories. */
  async scan(): Promise<{ models: Map<string, ModelLocation>; duplicates: Set<string> }> {
    return scanRepositories(this.options.repositories);
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
    return this.withLock(name, () => this.doLoad(name, options));
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
    const location = await writeOverrideFolder(name, files);
    const root = location.repository;
    try {
      await this.loadFrom(name, location, options, root);
    } catch (e) {
      const err = toInferenceError(e);
      throw new InferenceError(err.code, hideOverrideFolder(err.message, root));
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
    // Messages stored as reasons (repository index) and logged never show an override folder's path.
    const hide = (message: string): string => (overrideRoot ? hideOverrideFolder(message, overrideRoot) : message);
    const entry = this.entry(name);
    const fp = await fingerprint(location.path);
    const unchanged =
      options.config === undefined && !entry.overridden && entry.fingerprint === fp && !entry.error &&
      [...entry.versions.values()].some((v) => v.state === 'READY');
    if (unchanged) return;

    let completed;
    try {
      completed = await completeModelConfig(location, this.backends, this.worker, this.options, options.config);
    } catch (e) {
      const message = hide(toInferenceError(e).message);
      const hasReady = [...entry.versions.values()].some((v) => v.state === 'READY');
      if (!hasReady) {
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
      entry.error = reason;
      throw InferenceError.invalidArg(`failed to load '${name}', ${reason}`);
    }
    const labels = await this.readLabels(location, config);
    const results = await Promise.all(wanted.map((v) => this.loadVersion(location, config, v, labels, overrideRoot, hide)));
    const old = new Map(entry.versions);
    const failures: string[] = [];
    entry.error = undefined;
    entry.fingerprint = fp;
    entry.overridden = options.config !== undefined;
    const retired: VersionEntry[] = [];
    for (const r of results) {
      const prev = old.get(r.version);
      if (r.state === 'READY') {
        entry.versions.set(r.version, r);
        if (prev?.runtime) retired.push(prev);
      } else {
        failures.push(`version ${r.version}: ${r.reason}`);
        // A failed reload keeps the previous version serving.
        if (!prev || prev.state !== 'READY') entry.versions.set(r.version, r);
      }
      old.delete(r.version);
    }
    for (const stale of old.values()) {
      if (stale.runtime) retired.push(stale);
      entry.versions.set(stale.version, { version: stale.version, state: 'UNAVAILABLE', reason: 'unloaded' });
    }
    await Promise.all(retired.map((v) => this.retire(v.runtime!)));
    await this.removeUnusedOverrides(name, retired.map((v) => v.runtime?.overrideRoot));
    if (failures.length > 0) {
      throw InferenceError.invalidArg(`failed to load '${name}', ${failures.join('; ')}`);
    }
    this.options.log('info', `successfully loaded '${name}' version${wanted.length > 1 ? 's' : ''} ${wanted.join(', ')}`);
  }

  private async versionsOnDiskSafe(location: ModelLocation): Promise<number[]> {
    return listVersions(location.path).catch(() => []);
  }

  private markFailed(entry: ModelEntry, versions: number[], reason: string): void {
    for (const v of versions) {
      const prev = entry.versions.get(v);
      if (prev?.state === 'READY') continue;
      entry.versions.set(v, { version: v, state: 'UNAVAILABLE', reason });
    }
  }

  private async loadVersion(
    location: ModelLocation,
    config: ModelConfig,
    version: number,
    labels: Map<string, string[]>,
    overrideRoot: string | undefined,
    hide: (message: string) => string,
  ): Promise<VersionEntry> {
    const key = `${config.name}/${version}/${++this.generation}`;
    const started = performance.now();
    try {
      // An ensemble has no instances: its scheduler sends its steps to their models.
      const capacity =
        config.platform === ENSEMBLE_PLATFORM
          ? { instances: 0, depth: 1 }
          : await this.worker.load({
              key,
              config,
              modelDir: location.path,
              versionDir: await versionDir(location.path, version),
              version,
            });
      this.scheduler.open(key, config, capacity, location.path);
      const runtime: VersionRuntime = {
        key,
        config,
        io: modelIo(config),
        stats: new ModelStatsRecorder(config.name ?? location.name, version),
        labels,
        loadSecs: (performance.now() - started) / 1000,
        overrideRoot,
      };
      return { version, state: 'READY', reason: '', runtime };
    } catch (e) {
      await this.worker.unload(key).catch(() => undefined);
      const message = hide(toInferenceError(e).message);
      this.options.log('error', `failed to load '${location.name}' version ${version}: ${message}`);
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

  /** Stops routing to a runtime, waits for its requests, frees its instances. */
  private async retire(runtime: VersionRuntime): Promise<void> {
    await this.scheduler.close(runtime.key);
    await this.worker.unload(runtime.key);
  }

  async unload(name: string): Promise<void> {
    checkModelName(name);
    return this.withLock(name, async () => {
      const entry = this.entries.get(name);
      if (!entry) return;
      const retired: VersionRuntime[] = [];
      for (const v of entry.versions.values()) {
        if (v.runtime) retired.push(v.runtime);
        entry.versions.set(v.version, { version: v.version, state: 'UNAVAILABLE', reason: 'unloaded' });
      }
      entry.error = undefined;
      entry.fingerprint = undefined;
      await Promise.all(retired.map((r) => this.retire(r)));
      await this.removeUnusedOverrides(name, retired.map((r) => r.overrideRoot));
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

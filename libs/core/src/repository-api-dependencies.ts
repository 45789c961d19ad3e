import { modelConfigFromJson, parseModelConfig, type ModelConfig } from '@nereid/model-config';
import { InferenceError, toInferenceError } from '@nereid/protocol';
import { readConfigText } from '@nereid/repository';
import type { LoadOptions } from './core';
import type { ModelRepositoryManager } from './model-manager';

type Log = (level: 'info' | 'warn' | 'error' | 'verbose', message: string) => void;

/** The distinct models an ensemble config's steps name (none for other models). */
function composingOf(config: ModelConfig | undefined): string[] {
  const steps = config?.ensemble_scheduling?.step ?? [];
  return [...new Set(steps.map((s) => s.model_name ?? '').filter((n) => n !== ''))];
}

/**
 * Load and unload requests with Triton's dependency rules between ensembles and the models their
 * steps name (Triton core `model_repository_manager.cc`, its DependencyGraph):
 * - loading an ensemble first loads each composing model that is not loaded; those are loaded
 *   *for* the ensemble (not explicitly). A composing model that fails to load fails the ensemble;
 * - unloading a composing model unloads the loaded ensembles that use it (they cannot run without
 *   it); loading it again brings those ensembles back;
 * - unloading with `unload_dependents` also unloads, recursively, the composing models that were
 *   loaded for the ensemble and that no other loaded ensemble uses. A model a load request named
 *   stays until an unload request names it.
 */
export class EnsembleDependencies {
  /** Models loaded because an ensemble needed them. */
  private readonly implicit = new Set<string>();
  /** Models a load request named (they stay until an unload request names them). */
  private readonly requested = new Set<string>();
  /** Ensembles unloaded (or refused) because a composing model went away, with their last load's options. */
  private readonly orphaned = new Map<string, LoadOptions>();

  constructor(
    private readonly manager: ModelRepositoryManager,
    private readonly log: Log = () => undefined,
  ) {}

  /** A load request naming `name`. */
  async load(name: string, options: LoadOptions = {}): Promise<void> {
    this.requested.add(name);
    await this.loadWith(name, options, [name]);
    this.orphaned.delete(name);
    await this.restoreOrphans(name);
  }

  /** An unload request naming `name`. */
  async unload(name: string, unloadDependents: boolean): Promise<void> {
    await this.unloadOne(name, unloadDependents, false);
  }

  private async loadWith(name: string, options: LoadOptions, chain: readonly string[]): Promise<void> {
    try {
      await this.loadComposing(name, options, await this.composingToLoad(name, options), chain);
    } catch (e) {
      await this.refuse(name, e);
      throw e;
    }
    await this.manager.load(name, options);
    // The config as completed and served is the authority (a custom config file name, say): a
    // composing model the first read missed is loaded now, or the ensemble goes.
    const missed = composingOf(this.servedConfig(name)).filter((c) => !chain.includes(c) && !this.isReady(c));
    if (missed.length === 0) return;
    try {
      await this.loadComposing(name, options, missed, chain);
    } catch (e) {
      await this.manager.unload(name);
      await this.refuse(name, e);
      throw e;
    }
  }

  /** A refused ensemble shows UNAVAILABLE in the index with the dependency's reason (not as never loaded). */
  private async refuse(name: string, e: unknown): Promise<void> {
    const message = toInferenceError(e).message;
    const prefix = `failed to load '${name}', `;
    await this.manager.refuse(name, message.startsWith(prefix) ? message.slice(prefix.length) : message);
  }

  /** Loads the composing models of `name` that are not loaded, for it; the first failure fails `name`. */
  private async loadComposing(name: string, options: LoadOptions, composing: readonly string[], chain: readonly string[]): Promise<void> {
    for (const c of composing) {
      // A cycle is the ensemble validation's to report (the manager refuses such a config).
      if (chain.includes(c) || this.isReady(c)) continue;
      try {
        await this.loadWith(c, {}, [...chain, c]);
        this.implicit.add(c);
      } catch (e) {
        const reason = toInferenceError(e).message;
        this.orphaned.set(name, options);
        throw InferenceError.invalidArg(
          `failed to load '${name}', ensemble '${name}' depends on '${c}' which has no loaded version. Model '${c}' loading failed with error: ${reason}`,
        );
      }
    }
  }

  private async unloadOne(name: string, unloadDependents: boolean, cascading: boolean): Promise<void> {
    const composing = composingOf(this.servedConfig(name));
    await this.manager.unload(name);
    this.implicit.delete(name);
    this.requested.delete(name);
    if (!cascading) this.orphaned.delete(name);
    for (const ensemble of this.readyEnsemblesUsing(name)) {
      this.log('error', `ensemble '${ensemble}' contains models that are not available or ambiguous: ${name}`);
      this.orphaned.set(ensemble, {});
      await this.manager.unload(ensemble);
    }
    if (!unloadDependents) return;
    for (const c of composing) {
      const loadedForEnsembles = this.implicit.has(c) && !this.requested.has(c);
      if (loadedForEnsembles && this.readyEnsemblesUsing(c).length === 0) await this.unloadOne(c, true, true);
    }
  }

  /** Ensembles waiting for `name` whose composing models are all loaded now are loaded again. */
  private async restoreOrphans(name: string): Promise<void> {
    for (const [ensemble, options] of [...this.orphaned]) {
      const steps = await this.composingToLoad(ensemble, options).catch((): string[] => []);
      if (!steps.includes(name) || !steps.every((s) => this.isReady(s))) continue;
      this.orphaned.delete(ensemble);
      await this.manager.load(ensemble, options).catch((e) => {
        this.log('error', `failed to load '${ensemble}' again after '${name}' was loaded: ${toInferenceError(e).message}`);
      });
    }
  }

  /**
   * The models `name`'s config (the load's override, else its repository config) names in
   * ensemble steps. A config that cannot be read names none: the manager's load reports it.
   */
  private async composingToLoad(name: string, options: LoadOptions): Promise<string[]> {
    try {
      if (options.config !== undefined) return composingOf(modelConfigFromJson(JSON.parse(options.config)));
      const location = (await this.manager.scan()).models.get(name);
      const read = location ? await readConfigText(location.path) : undefined;
      return read ? composingOf(parseModelConfig(read.text, read.file)) : [];
    } catch {
      return [];
    }
  }

  private isReady(name: string): boolean {
    return [...(this.manager.get(name)?.versions.values() ?? [])].some((v) => v.state === 'READY');
  }

  private servedConfig(name: string): ModelConfig | undefined {
    for (const v of this.manager.get(name)?.versions.values() ?? []) {
      if (v.state === 'READY' && v.runtime) return v.runtime.config;
    }
    return undefined;
  }

  private readyEnsemblesUsing(name: string): string[] {
    return this.manager
      .all()
      .filter((e) => e.name !== name && composingOf(this.servedConfig(e.name)).includes(name))
      .map((e) => e.name);
  }
}

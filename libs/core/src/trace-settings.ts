import { InferenceError } from '@nereid/protocol';
import type { TraceSettings } from './core';
import { fileUnder } from './trace-paths';

const LEVELS = new Set(['OFF', 'TIMESTAMPS', 'TENSORS']);
const UPDATABLE = ['trace_level', 'trace_rate', 'trace_count', 'log_frequency', 'trace_file'] as const;
type Key = (typeof UPDATABLE)[number];

type Settings = Partial<Record<Key, string | string[]>>;

/** The trace configuration the server starts with (`--trace-config`). */
export interface TraceStartup {
  level: string[];
  rate: number;
  count: number;
  mode: 'triton' | 'opentelemetry';
  file: string;
  logFrequency: number;
  /**
   * `--trace-dir`: the directory `trace_file` may name a file under through the trace extension.
   * Unset: the file is set at start-up only (Triton's behaviour).
   */
  dir?: string;
}

export function defaultTraceStartup(): TraceStartup {
  return { level: ['OFF'], rate: 1000, count: -1, mode: 'triton', file: '', logFrequency: 0 };
}

function checkValue(key: Key, value: unknown): string | string[] {
  if (key === 'trace_level') {
    if (!Array.isArray(value) || value.some((l) => typeof l !== 'string' || !LEVELS.has(l))) {
      throw InferenceError.invalidArg(`invalid value for 'trace_level': expected an array of 'OFF', 'TIMESTAMPS' or 'TENSORS'`);
    }
    return value as string[];
  }
  const s = typeof value === 'number' ? String(value) : value;
  if (typeof s !== 'string' || !/^-?[0-9]+$/.test(s)) {
    throw InferenceError.invalidArg(`invalid value for '${key}': expected an integer in a string`);
  }
  if (key !== 'trace_count' && s.startsWith('-')) {
    throw InferenceError.invalidArg(`invalid value for '${key}': expected a non-negative integer`);
  }
  return s;
}

/**
 * What one scope (the global settings, or a model with settings of its own) traces, and its
 * sampling state: every `rate`-th request is traced while `remaining` (-1 = unlimited) lasts.
 */
export class TraceScope {
  readonly timestamps: boolean;
  readonly tensors: boolean;
  readonly rate: number;
  readonly logFrequency: number;
  private seen = 0;

  constructor(
    settings: Required<Settings>,
    readonly mode: 'triton' | 'opentelemetry',
    readonly file: string,
    /** Traces still to collect; -1 = unlimited. */
    public remaining: number,
  ) {
    const level = settings.trace_level as string[];
    this.timestamps = level.includes('TIMESTAMPS');
    this.tensors = level.includes('TENSORS');
    this.rate = Number(settings.trace_rate);
    this.logFrequency = Number(settings.log_frequency);
  }

  get on(): boolean {
    return (this.timestamps || this.tensors) && this.remaining !== 0;
  }

  /** Whether the next request of this scope is traced (Triton: every rate-th, `count` at most). */
  sample(): boolean {
    if (!this.on || this.rate === 0) return false;
    if (++this.seen % this.rate !== 0) return false;
    if (this.remaining > 0) this.remaining--;
    return true;
  }

  /** A request that carries a client's trace context is traced whatever the rate (Triton, OpenTelemetry mode). */
  take(): boolean {
    if (!this.on) return false;
    if (this.remaining > 0) this.remaining--;
    return true;
  }
}

/** Global and per-model trace settings of the trace extension, each with its sampling scope. */
export class TraceSettingsStore {
  private readonly global: Required<Settings>;
  private readonly models = new Map<string, Settings>();
  private readonly scopes = new Map<string, TraceScope>();
  private globalScope: TraceScope;
  /** True while any scope may trace: the one test a request pays when tracing is off. */
  active = false;

  constructor(private readonly startup: TraceStartup = defaultTraceStartup()) {
    this.global = {
      trace_level: startup.level.length ? startup.level : ['OFF'],
      trace_rate: String(startup.rate),
      trace_count: String(startup.count),
      log_frequency: String(startup.logFrequency),
      trace_file: startup.file,
    };
    this.globalScope = this.scopeOf(this.global);
    this.refreshActive();
  }

  get mode(): 'triton' | 'opentelemetry' {
    return this.startup.mode;
  }

  /** The scope a request for `model` samples in. */
  scopeFor(model: string): TraceScope {
    return this.scopes.get(model) ?? this.globalScope;
  }

  /** Every scope's trace file and log frequency (to flush them all at shutdown). */
  allScopes(): TraceScope[] {
    return [this.globalScope, ...this.scopes.values()];
  }

  apply(model: string, update?: Record<string, unknown>): TraceSettings {
    if (update) this.update(model, update);
    return this.view(model);
  }

  private update(model: string, update: Record<string, unknown>): void {
    for (const k of Object.keys(update)) {
      if (!(UPDATABLE as readonly string[]).includes(k)) throw InferenceError.invalidArg(`unknown trace setting '${k}'`);
    }
    if (update.trace_file !== undefined && update.trace_file !== null) {
      if (!this.startup.dir) throw InferenceError.unsupported('trace file location can not be updated through network protocol');
      if (typeof update.trace_file !== 'string') throw InferenceError.invalidArg(`invalid value for 'trace_file': expected a string`);
    }
    const checked: Settings = {};
    for (const k of UPDATABLE) {
      const v = update[k];
      if (v === undefined || v === null) continue;
      checked[k] = k === 'trace_file' ? fileUnder(this.startup.dir!, v as string, 'trace_file', '--trace-dir') : checkValue(k, v);
    }
    const target: Settings = model ? (this.models.get(model) ?? {}) : this.global;
    for (const k of UPDATABLE) {
      if (!(k in update)) continue;
      if (update[k] === null) {
        if (model) delete target[k];
        continue;
      }
      target[k] = checked[k];
    }
    if (model) this.models.set(model, target);
    this.rebuild();
  }

  /** New scopes after an update: sampling starts again, `trace_count` counts from its new value. */
  private rebuild(): void {
    this.globalScope = this.scopeOf(this.global);
    this.scopes.clear();
    for (const [name, own] of this.models) {
      if (Object.keys(own).length > 0) this.scopes.set(name, this.scopeOf({ ...this.global, ...own }));
    }
    this.refreshActive();
  }

  private scopeOf(s: Required<Settings>): TraceScope {
    return new TraceScope(s, this.startup.mode, s.trace_file as string, Number(s.trace_count));
  }

  private refreshActive(): void {
    this.active = this.allScopes().some((s) => s.on);
  }

  /** Settings as the extension shows them; `trace_count` is what remains to collect. */
  private view(model: string): TraceSettings {
    const own = model ? (this.models.get(model) ?? {}) : {};
    const merged: Required<Settings> = { ...this.global, ...own };
    const scope = this.scopeFor(model);
    const out: TraceSettings = {
      trace_level: merged.trace_level,
      trace_rate: merged.trace_rate,
      trace_count: String(scope.remaining),
      log_frequency: merged.log_frequency,
      trace_file: merged.trace_file,
      trace_mode: this.startup.mode,
    };
    if (this.startup.mode !== 'triton') {
      delete out.log_frequency;
      delete out.trace_file;
    }
    // A refreshed flag also after a scope ran out of traces.
    this.refreshActive();
    return out;
  }
}

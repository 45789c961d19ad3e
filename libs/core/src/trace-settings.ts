import { InferenceError } from '@nereid/protocol';
import type { TraceSettings } from './core';

const LEVELS = new Set(['OFF', 'TIMESTAMPS', 'TENSORS']);
const UPDATABLE = ['trace_level', 'trace_rate', 'trace_count', 'log_frequency'] as const;
type Key = (typeof UPDATABLE)[number];

type Settings = Partial<Record<Key, string | string[]>>;

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

/** Global and per-model trace settings of the trace extension. */
export class TraceSettingsStore {
  private readonly global: Required<Settings> & { trace_file: string; trace_mode: string } = {
    trace_level: ['OFF'],
    trace_rate: '1000',
    trace_count: '-1',
    log_frequency: '0',
    trace_file: '',
    trace_mode: 'triton',
  };
  private readonly models = new Map<string, Settings>();

  apply(model: string, update?: Record<string, unknown>): TraceSettings {
    if (update) {
      if (update.trace_file !== undefined && update.trace_file !== null) {
        throw InferenceError.unsupported('trace file location can not be updated through network protocol');
      }
      for (const k of Object.keys(update)) {
        if (k !== 'trace_file' && !(UPDATABLE as readonly string[]).includes(k)) {
          throw InferenceError.invalidArg(`unknown trace setting '${k}'`);
        }
      }
      const target: Settings = model ? (this.models.get(model) ?? {}) : this.global;
      for (const k of UPDATABLE) {
        if (!(k in update)) continue;
        const v = update[k];
        if (v === null) {
          if (model) delete target[k];
          continue;
        }
        target[k] = checkValue(k, v);
      }
      if (model) this.models.set(model, target);
    }
    const own = model ? (this.models.get(model) ?? {}) : {};
    return { ...this.global, ...own };
  }
}

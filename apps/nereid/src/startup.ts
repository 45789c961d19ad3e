import type { ModelRepositoryManager } from '@nereid/core';
import { InferenceError } from '@nereid/protocol';
import type { ServeOptions } from './cli-options';
import type { LogLevel } from './logger';

/** Loads what the control mode asks for at start-up; with --exit-on-error any failure rejects. */
export async function loadStartupModels(
  manager: ModelRepositoryManager,
  options: ServeOptions,
  log: (level: LogLevel, message: string) => void,
  /** Explicit mode's named models: loaded as a load request would be (an ensemble with its composing models). */
  loadNamed: (name: string) => Promise<void> = (name) => manager.load(name),
): Promise<void> {
  const { models, duplicates } = await manager.scan();
  let names: string[];
  if (options.modelControlMode === 'explicit') {
    names = options.loadModels.includes('*') ? [...models.keys(), ...duplicates] : options.loadModels;
  } else {
    names = [...models.keys(), ...duplicates];
  }
  const named = options.modelControlMode === 'explicit' && !options.loadModels.includes('*');
  const results = await Promise.allSettled(names.map((n) => (named ? loadNamed(n) : manager.load(n))));
  const failures = results
    .map((r, i) => (r.status === 'rejected' ? `${names[i]}: ${(r.reason as Error).message}` : undefined))
    .filter((f): f is string => f !== undefined);
  for (const row of await manager.index(false)) {
    if (row.state) log('info', `model '${row.name}' version ${row.version ?? '-'}: ${row.state}${row.reason ? ` (${row.reason})` : ''}`);
  }
  if (failures.length > 0 && options.exitOnError) {
    throw InferenceError.internal(`failed to load all models: ${failures.join('; ')}`);
  }
}

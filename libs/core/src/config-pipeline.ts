import * as path from 'node:path';
import type { BackendRegistry } from '@nereid/backends';
import {
  checkConfigPaths,
  fillServerSide,
  modelConfigFromJson,
  normalizeModelConfig,
  parseModelConfig,
  validateModelConfig,
  type ModelConfig,
} from '@nereid/model-config';
import { InferenceError } from '@nereid/protocol';
import { listVersions, readConfigText, versionDir, type ModelLocation } from '@nereid/repository';
import type { WorkerChannel } from '@nereid/transport';

export interface ConfigOptions {
  autoComplete: boolean;
  modelConfigName?: string;
  defaultMaxBatchSize: number;
  gpuCount: number;
}

export interface CompletedConfig {
  config: ModelConfig;
  /** Versions present on disk, ascending. */
  versionsOnDisk: number[];
}

/**
 * config.pbtxt (or an override) → parse → server-side fill → backend auto-complete →
 * normalize → validate. Throws InferenceError naming the model and, for parse errors, file/line/col.
 */
export async function completeModelConfig(
  location: ModelLocation,
  backends: BackendRegistry,
  worker: WorkerChannel,
  options: ConfigOptions,
  overrideJson?: string,
): Promise<CompletedConfig> {
  const versionsOnDisk = await listVersions(location.path);
  let config: ModelConfig;
  if (overrideJson !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(overrideJson);
    } catch (e) {
      throw InferenceError.invalidArg(`Invalid config override: ${(e as Error).message}`);
    }
    config = modelConfigFromJson(parsed);
  } else {
    const read = await readConfigText(location.path, options.modelConfigName);
    if (read) config = parseModelConfig(read.text, read.file);
    else if (!options.autoComplete) {
      throw InferenceError.invalidArg(
        `failed to load model '${location.name}': ${path.join(location.path, 'config.pbtxt')} is required when auto-complete is disabled`,
      );
    } else config = {};
  }
  const versionDirs = await Promise.all(versionsOnDisk.map((v) => versionDir(location.path, v)));
  config = fillServerSide(config, { modelName: location.name, versionDirs });
  // Before a backend reads anything: every file the config names stays inside the model folder.
  await checkConfigPaths(config, { modelDir: location.path, versionDirs }, overrideJson !== undefined);
  const backend = config.backend ?? '';
  if (options.autoComplete && backend && backend !== 'ensemble' && backends.has(backend) && versionDirs.length > 0) {
    config = await worker.autoComplete(backend, {
      config,
      modelDir: location.path,
      versionDir: versionDirs[0],
      defaultMaxBatchSize: options.defaultMaxBatchSize,
    });
  }
  config = normalizeModelConfig(config, {
    defaultCpuInstanceCount: (name) => (backends.has(name) ? (backends.get(name).defaultCpuInstanceCount ?? 1) : 1),
    gpuCount: options.gpuCount,
  });
  validateModelConfig(config, { knownBackends: backends.names().filter((n) => n !== 'ensemble'), gpuCount: options.gpuCount });
  return { config, versionsOnDisk };
}

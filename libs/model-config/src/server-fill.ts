import * as fs from 'node:fs';
import * as path from 'node:path';
import { InferenceError } from '@nereid/protocol';
import type { ModelConfig } from './types';
import { cloneJson } from './values';

/** A model kind the server recognises before any backend runs (model-config.md §1). */
interface KnownKind {
  backend: string;
  platform: string;
  file: string;
}

/** Detection order of §4: TensorFlow → TensorRT → ONNX → OpenVINO → PyTorch → Python. */
const KNOWN_KINDS: KnownKind[] = [
  { backend: 'tensorflow', platform: 'tensorflow_savedmodel', file: 'model.savedmodel' },
  { backend: 'tensorflow', platform: 'tensorflow_graphdef', file: 'model.graphdef' },
  { backend: 'tensorrt', platform: 'tensorrt_plan', file: 'model.plan' },
  { backend: 'onnxruntime', platform: 'onnxruntime_onnx', file: 'model.onnx' },
  { backend: 'openvino', platform: '', file: 'model.xml' },
  { backend: 'pytorch', platform: 'pytorch_libtorch', file: 'model.pt' },
  { backend: 'pytorch', platform: 'torch_aoti', file: 'model.pt2' },
  { backend: 'python', platform: '', file: 'model.py' },
];

/** Platform strings and the backend that serves each (`libtorch` is an alias of `pytorch_libtorch`). */
export const PLATFORM_BACKENDS: Readonly<Record<string, string>> = {
  tensorflow_savedmodel: 'tensorflow',
  tensorflow_graphdef: 'tensorflow',
  tensorrt_plan: 'tensorrt',
  onnxruntime_onnx: 'onnxruntime',
  pytorch_libtorch: 'pytorch',
  libtorch: 'pytorch',
  torch_aoti: 'pytorch',
};

export const ENSEMBLE_PLATFORM = 'ensemble';

export interface ServerFillContext {
  /** Directory name of the model. */
  modelName: string;
  /** Absolute version directories, sorted lowest first. */
  versionDirs: string[];
}

function kindFromFiles(config: ModelConfig, versionDirs: string[], candidates: KnownKind[]): KnownKind | undefined {
  const byName = candidates.find((k) => k.file === config.default_model_filename);
  if (byName || config.default_model_filename || versionDirs.length === 0) return byName;
  return candidates.find((k) => fs.existsSync(path.join(versionDirs[0], k.file)));
}

function backendFromModelName(name: string): string {
  const dot = name.lastIndexOf('.');
  const backend = dot < 0 ? '' : name.slice(dot + 1);
  if (!backend) {
    throw InferenceError.invalidArg(
      `Invalid model name: Could not determine backend for model '${name}' with no backend in model configuration. ` +
        "Expected model name of the form 'model.<backend_name>'.",
    );
  }
  return backend;
}

/** platform/backend/default_model_filename from whatever of them is known plus the files on disk. */
function fillBackendFields(config: ModelConfig, ctx: ServerFillContext): void {
  if (config.platform === ENSEMBLE_PLATFORM) return;
  if (!config.platform && !config.backend) {
    const found = kindFromFiles(config, ctx.versionDirs, KNOWN_KINDS);
    if (found) {
      config.backend = found.backend;
      if (found.platform) config.platform = found.platform;
    }
  }
  if (config.platform && !config.backend && PLATFORM_BACKENDS[config.platform]) {
    config.backend = PLATFORM_BACKENDS[config.platform];
  }
  if (config.backend && !config.platform) {
    const withPlatform = KNOWN_KINDS.filter((k) => k.backend === config.backend && k.platform);
    const found = kindFromFiles(config, ctx.versionDirs, withPlatform) ?? withPlatform[0];
    if (found) config.platform = found.platform;
  }
  if (!config.platform && !config.backend) config.backend = backendFromModelName(config.name ?? ctx.modelName);
  if (!config.default_model_filename) {
    const kind = KNOWN_KINDS.find((k) => k.backend === config.backend && (k.platform === '' || k.platform === config.platform));
    if (kind) config.default_model_filename = kind.file;
  }
}

/**
 * Server-side fill before any backend sees the config (§4): `name` from the directory, then
 * backend/platform/default_model_filename from the platform, the default file name or the files in the
 * lowest version directory, else from a model name of the form `<name>.<backend>`. Returns a new object.
 */
export function fillServerSide(config: ModelConfig, ctx: ServerFillContext): ModelConfig {
  const out = cloneJson(config);
  if (!out.name) out.name = ctx.modelName;
  else if (out.name !== ctx.modelName) {
    throw InferenceError.invalidArg(
      `unexpected directory name '${ctx.modelName}' for model '${out.name}', directory name must equal model name`,
    );
  }
  fillBackendFields(out, ctx);
  return out;
}

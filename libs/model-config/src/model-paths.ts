import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { hasControlCharacters, InferenceError } from '@nereid/protocol';
import type { ModelConfig } from './types';

/** The placeholder Triton replaces by the model folder in path parameters. */
export const MODEL_DIRECTORY_PLACEHOLDER = '$$TRITON_MODEL_DIRECTORY';

function inside(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(path.sep) ? parent : parent + path.sep);
}

/**
 * Where `relative` leads from the real folder `start`, following each component as the file system
 * would: a symbolic link is replaced by its target before the next `..` is applied. Components
 * from the first one that does not exist on are appended as written.
 */
async function physicalPath(start: string, relative: string): Promise<string> {
  let current = start;
  const parts = relative.split('/');
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i];
    if (part === '' || part === '.') continue;
    if (part === '..') {
      current = path.dirname(current);
      continue;
    }
    const next = path.join(current, part);
    try {
      current = await fs.realpath(next);
    } catch {
      return path.join(next, ...parts.slice(i + 1));
    }
  }
  return current;
}

/**
 * Resolves a path a model's config names (`label_filename`, `default_model_filename`, a warmup's
 * `input_data_file`...) inside the folder it must stay in: the model folder or one of its
 * sub-folders. The path must stay inside both as written (`..` taken lexically) and as the file
 * system follows it (symbolic links resolved, then compared with the folder's real path).
 * Absolute paths are refused. Returns `root` joined with the path (the file need not exist).
 * `what` names the setting in errors, which never show a server path: e.g.
 * `label file path 'x' for output 'o' in model 'm'`.
 */
export async function resolveInside(root: string, configured: string, what: string): Promise<string> {
  if (hasControlCharacters(configured) || path.isAbsolute(configured)) {
    throw InferenceError.invalidArg(`${what} must be a relative path inside the model directory`);
  }
  const lexical = path.resolve(root, configured);
  let realRoot: string;
  try {
    realRoot = await fs.realpath(root);
  } catch {
    // The folder does not exist (no warmup/ folder, say): the text alone decides.
    realRoot = path.resolve(root);
  }
  if (!inside(lexical, path.resolve(root)) || !inside(await physicalPath(realRoot, configured), realRoot)) {
    throw InferenceError.invalidArg(`${what} is outside model directory`);
  }
  return lexical;
}

/**
 * A path parameter (`EXECUTION_ENV_PATH`): a leading `$$TRITON_MODEL_DIRECTORY` stands for the
 * model folder, and such paths and relative ones must stay inside it. An absolute path is taken as
 * written only with `allowOutside` (a config from the repository: the operator chose it); from a
 * client's config override it is refused. Returns the absolute path to use.
 */
export async function resolvePathParameter(modelDir: string, raw: string, what: string, allowOutside: boolean): Promise<string> {
  if (raw.startsWith(MODEL_DIRECTORY_PLACEHOLDER)) {
    return resolveInside(modelDir, raw.slice(MODEL_DIRECTORY_PLACEHOLDER.length).replace(/^\/+/, '') || '.', what);
  }
  const text = raw.split(MODEL_DIRECTORY_PLACEHOLDER).join(modelDir);
  if (!path.isAbsolute(text)) return resolveInside(modelDir, text, what);
  if (allowOutside) return text;
  throw InferenceError.invalidArg(`${what} must name a path inside the model directory (relative, or starting with ${MODEL_DIRECTORY_PLACEHOLDER})`);
}

export interface ModelFolders {
  modelDir: string;
  /** The version folders to be loaded. */
  versionDirs: readonly string[];
}

/**
 * Checks every path `config` names against the folders of its model (before any of them is read):
 * output label files, the model file names (in each version folder), warmup data files, initial
 * state data files and the Python backend's `EXECUTION_ENV_PATH`. `fromOverride`: the config came
 * from a load request rather than the repository, so absolute paths are refused everywhere.
 */
export async function checkConfigPaths(config: ModelConfig, folders: ModelFolders, fromOverride: boolean): Promise<void> {
  const model = config.name ?? '';
  const { modelDir, versionDirs } = folders;
  for (const o of config.output ?? []) {
    if (o.label_filename) {
      await resolveInside(modelDir, o.label_filename, `label file path '${o.label_filename}' for output '${o.name ?? ''}' in model '${model}'`);
    }
  }
  const modelFiles = [config.default_model_filename ?? '', ...Object.values(config.cc_model_filenames ?? {})].filter((f) => f !== '');
  for (const file of modelFiles) {
    for (const dir of versionDirs) await resolveInside(dir, file, `model file name '${file}' of model '${model}'`);
  }
  for (const w of config.model_warmup ?? []) {
    for (const [input, spec] of Object.entries(w.inputs ?? {})) {
      if (!spec.input_data_file) continue;
      const what = `input_data_file '${spec.input_data_file}' of input '${input}' in warmup '${w.name ?? ''}' of model '${model}'`;
      await resolveInside(path.join(modelDir, 'warmup'), spec.input_data_file, what);
    }
  }
  for (const s of config.sequence_batching?.state ?? []) {
    for (const init of s.initial_state ?? []) {
      if (!init.data_file) continue;
      const what = `data_file '${init.data_file}' of initial state '${init.name ?? ''}' in model '${model}'`;
      await resolveInside(path.join(modelDir, 'initial_state'), init.data_file, what);
    }
  }
  const envPath = config.parameters?.EXECUTION_ENV_PATH?.string_value;
  if (envPath) await resolvePathParameter(modelDir, envPath, `EXECUTION_ENV_PATH '${envPath}' of model '${model}'`, !fromOverride);
}

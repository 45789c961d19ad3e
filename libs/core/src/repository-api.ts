import { InferenceError } from '@nereid/protocol';
import type { InferenceCore, LoadOptions, RepositoryIndexEntry } from './core';
import { repositoryNameUnsupported, type RepositoryWords } from './repository-api-words';

/**
 * The model repository extension (index, load, unload), once for both protocols. The front doors
 * only turn their wire form into these requests (JSON values, gRPC ModelRepositoryParameter
 * members) and hand them here with their protocol's words; every rule is applied here:
 * - a named repository is refused (Triton serves only the unnamed one; HTTP's index ignores it);
 * - load parameters: `config` (ModelConfig JSON text) and `file:<version>/<path>` (the file's bytes;
 *   the manager checks the path, see override-files.ts); any other key is refused;
 * - unload parameter `unload_dependents` (a boolean, default false); other keys are ignored;
 * - index: `ready` (a boolean, default false) lists only READY versions.
 */

/** One parameter of a repository request, typed as its protocol delivered it. */
export type RepositoryParameter =
  | { type: 'string'; value: string }
  | { type: 'bytes'; value: Uint8Array }
  | { type: 'bool'; value: boolean }
  | { type: 'int64'; value: string }
  | { type: 'other' };

/** Parameters by name (a Map: names are the client's, `__proto__` included). */
export type RepositoryParameters = ReadonlyMap<string, RepositoryParameter>;

export interface RepositoryIndexRequest {
  /** `repository_name` / the `{repo}` path segment; "" for none (see RepositoryWords.refusesNamedIndex). */
  repository: string;
  /** Absent: false. */
  ready?: unknown;
}

export interface RepositoryModelRequest {
  repository: string;
  model: string;
  parameters: RepositoryParameters;
}

const FILE_PREFIX = 'file:';

/** Load parameters → LoadOptions; file overrides keep the parameter name as sent (`file:1/model.onnx`). */
export function loadOptionsOf(params: RepositoryParameters, words: RepositoryWords): LoadOptions {
  const options: LoadOptions = {};
  for (const [key, p] of params) {
    if (key === 'config') {
      if (p.type !== 'string') throw words.loadParameterType(key, 'string');
      options.config = p.value;
    } else if (key.startsWith(FILE_PREFIX)) {
      if (p.type !== 'bytes') throw words.loadParameterType(key, 'bytes');
      (options.files ??= new Map()).set(key, p.value);
    } else {
      throw words.unknownLoadParameter(key);
    }
  }
  return options;
}

/** The unload request's `unload_dependents` (default false). */
export function unloadDependentsOf(params: RepositoryParameters, words: RepositoryWords): boolean {
  const p = params.get('unload_dependents');
  if (p === undefined) return false;
  if (p.type !== 'bool') throw words.unloadDependentsType();
  return p.value;
}

/**
 * A JSON `parameters` object → repository parameters. Triton's HTTP door carries a file
 * override's bytes as base64 text: `file:` keys whose value is a string are decoded here (as
 * leniently as Triton's decoder: characters outside the alphabet are skipped).
 */
export function parametersFromJson(json: unknown): Map<string, RepositoryParameter> {
  const out = new Map<string, RepositoryParameter>();
  if (json === undefined || json === null) return out;
  if (typeof json !== 'object' || Array.isArray(json)) throw InferenceError.invalidArg("'parameters' must be a JSON object");
  for (const [key, value] of Object.entries(json as Record<string, unknown>)) {
    if (typeof value === 'string') {
      out.set(key, key.startsWith(FILE_PREFIX) ? { type: 'bytes', value: Buffer.from(value, 'base64') } : { type: 'string', value });
    } else if (typeof value === 'boolean') out.set(key, { type: 'bool', value });
    else if (typeof value === 'number' && Number.isInteger(value)) out.set(key, { type: 'int64', value: String(value) });
    else out.set(key, { type: 'other' });
  }
  return out;
}

/**
 * Triton's HTTP door reads every load parameter's value as a string before it looks at the key:
 * a value of another type is refused first, whatever its key.
 */
export function checkJsonLoadValues(json: unknown, words: RepositoryWords): void {
  if (json === undefined || json === null || typeof json !== 'object' || Array.isArray(json)) return;
  for (const [key, value] of Object.entries(json as Record<string, unknown>)) {
    if (typeof value !== 'string') throw words.loadParameterType(key, key.startsWith(FILE_PREFIX) ? 'bytes' : 'string');
  }
}

/** The repository extension over an InferenceCore, in one protocol's words. */
export class RepositoryApi {
  constructor(
    private readonly core: InferenceCore,
    private readonly words: RepositoryWords,
  ) {}

  async index(request: RepositoryIndexRequest): Promise<RepositoryIndexEntry[]> {
    if (request.repository !== '' && this.words.refusesNamedIndex) throw repositoryNameUnsupported();
    const ready = request.ready ?? false;
    if (typeof ready !== 'boolean') throw this.words.readyType();
    return this.core.repositoryIndex(ready);
  }

  async load(request: RepositoryModelRequest): Promise<void> {
    if (request.repository !== '') throw repositoryNameUnsupported();
    await this.core.loadModel(request.model, loadOptionsOf(request.parameters, this.words));
  }

  async unload(request: RepositoryModelRequest): Promise<void> {
    if (request.repository !== '') throw repositoryNameUnsupported();
    await this.core.unloadModel(request.model, unloadDependentsOf(request.parameters, this.words));
  }
}

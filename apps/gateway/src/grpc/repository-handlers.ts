import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import type { InferenceCore, LoadOptions } from '@nereid/core';
import { GrpcRequestErrors, InferenceError } from '@nereid/protocol';
import { unary } from './unary';
import type { WireRepositoryIndexRequest, WireRepositoryModelRequest, WireRepositoryParameter } from './wire-types';

function checkRepositoryName(name: string): void {
  if (name !== '') throw InferenceError.unsupported("'repository_name' specification is not supported");
}

function wrongLoadType(key: string, expected: string): InferenceError {
  return InferenceError.invalidArg(`invalid value type for load parameter '${key}', expected ${expected}.`);
}

/**
 * RepositoryModelLoad parameters → LoadOptions (`config` string, `file:<version>/<path>` bytes,
 * keyed by the parameter name as sent); any other key is refused. Triton's gRPC wording.
 */
export function loadOptionsOf(params: Record<string, WireRepositoryParameter>): LoadOptions {
  const options: LoadOptions = {};
  for (const key of Object.keys(params)) {
    const p = params[key];
    if (key === 'config') {
      if (p.parameter_choice !== 'string_param') throw wrongLoadType(key, 'string_param');
      options.config = p.string_param ?? '';
    } else if (key.startsWith('file:')) {
      if (p.parameter_choice !== 'bytes_param') throw wrongLoadType(key, 'bytes_param');
      (options.files ??= new Map()).set(key, p.bytes_param ?? new Uint8Array(0));
    } else {
      throw InferenceError.invalidArg(`unrecognized load parameter '${key}'.`);
    }
  }
  return options;
}

/** RepositoryModelUnload's `unload_dependents` (bool_param, default false). */
export function unloadDependentsOf(params: Record<string, WireRepositoryParameter>): boolean {
  const p = params.unload_dependents;
  if (p === undefined) return false;
  if (p.parameter_choice !== 'bool_param') throw GrpcRequestErrors.parameterType('unload_dependents', 'bool_param');
  return p.bool_param ?? false;
}

/** Model repository extension RPCs. */
export function repositoryHandlers(core: InferenceCore): UntypedServiceImplementation {
  return {
    RepositoryIndex: unary(async (r: WireRepositoryIndexRequest) => {
      checkRepositoryName(r.repository_name);
      const entries = await core.repositoryIndex(r.ready);
      return {
        models: entries.map((e) => ({
          name: e.name,
          version: e.version ?? '',
          state: e.state ?? '',
          reason: e.reason ?? '',
        })),
      };
    }),
    RepositoryModelLoad: unary(async (r: WireRepositoryModelRequest) => {
      checkRepositoryName(r.repository_name);
      await core.loadModel(r.model_name, loadOptionsOf(r.parameters));
      return {};
    }),
    RepositoryModelUnload: unary(async (r: WireRepositoryModelRequest) => {
      checkRepositoryName(r.repository_name);
      await core.unloadModel(r.model_name, unloadDependentsOf(r.parameters));
      return {};
    }),
  };
}

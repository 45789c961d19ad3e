import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import { GRPC_REPOSITORY_WORDS, RepositoryApi, type InferenceCore, type RepositoryParameter, type RepositoryParameters } from '@nereid/core';
import { unary } from './unary';
import type { WireRepositoryIndexRequest, WireRepositoryModelRequest, WireRepositoryParameter } from './wire-types';

/** One ModelRepositoryParameter → the protocol-neutral form (its oneof member decides the type). */
function parameterOf(p: WireRepositoryParameter): RepositoryParameter {
  switch (p.parameter_choice) {
    case 'string_param':
      return { type: 'string', value: p.string_param ?? '' };
    case 'bytes_param':
      return { type: 'bytes', value: p.bytes_param ?? new Uint8Array(0) };
    case 'bool_param':
      return { type: 'bool', value: p.bool_param ?? false };
    case 'int64_param':
      return { type: 'int64', value: String(p.int64_param ?? 0) };
    default:
      return { type: 'other' };
  }
}

/** The request's `parameters` map, keyed as sent (own keys only: proto-loader builds a plain object). */
export function repositoryParameters(params: Record<string, WireRepositoryParameter>): RepositoryParameters {
  const out = new Map<string, RepositoryParameter>();
  for (const key of Object.keys(params)) out.set(key, parameterOf(params[key]));
  return out;
}

/** Model repository extension RPCs: wire → RepositoryApi (libs/core/src/repository-api.ts). */
export function repositoryHandlers(core: InferenceCore): UntypedServiceImplementation {
  const api = new RepositoryApi(core, GRPC_REPOSITORY_WORDS);
  const model = (r: WireRepositoryModelRequest) => ({
    repository: r.repository_name,
    model: r.model_name,
    parameters: repositoryParameters(r.parameters ?? {}),
  });
  return {
    RepositoryIndex: unary(async (r: WireRepositoryIndexRequest) => {
      const entries = await api.index({ repository: r.repository_name, ready: r.ready });
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
      await api.load(model(r));
      return {};
    }),
    RepositoryModelUnload: unary(async (r: WireRepositoryModelRequest) => {
      await api.unload(model(r));
      return {};
    }),
  };
}

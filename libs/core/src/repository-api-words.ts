import { echo, GrpcRequestErrors, InferenceError, JsonAccess } from '@nereid/protocol';

/** The type a repository parameter arrived as (gRPC's ModelRepositoryParameter members, or a JSON value). */
export type RepositoryParameterType = 'string' | 'bytes' | 'bool' | 'int64' | 'other';

/**
 * How one protocol words the repository extension's request errors. Triton's HTTP door
 * (server src/http_server.cc `HandleRepositoryControl`) and gRPC door (src/grpc/grpc_server.cc)
 * word the same mistakes differently; the rules that apply are the same (repository-api.ts).
 */
export interface RepositoryWords {
  /** A load parameter (`config`, `file:...`) sent as another type than the one it needs. */
  loadParameterType(key: string, expected: 'string' | 'bytes'): InferenceError;
  /** A load parameter that is neither `config` nor `file:...`. */
  unknownLoadParameter(key: string): InferenceError;
  /** `unload_dependents` sent as something other than a boolean. */
  unloadDependentsType(): InferenceError;
  /** The index request's `ready` sent as something other than a boolean. */
  readyType(): InferenceError;
  /** Whether an index request naming a repository is refused (gRPC) or the name ignored (HTTP). */
  refusesNamedIndex: boolean;
}

/**
 * HTTP: Triton reads every load parameter's value as a JSON string first (TritonJson, INTERNAL:
 * a client's mistake answered 400 here, as the other JSON-reading errors are, see
 * request-errors.ts); a key it does not know answers 500 `unexpected error on creating Triton
 * parameter`, as Triton does.
 */
export const HTTP_REPOSITORY_WORDS: RepositoryWords = {
  loadParameterType: (key) => InferenceError.invalidArg(`invalid value type for load parameter '${echo(key)}', expected a string.`),
  unknownLoadParameter: () => InferenceError.internal('unexpected error on creating Triton parameter'),
  unloadDependentsType: () => InferenceError.invalidArg(`Unable to parse 'unload_dependents': ${JsonAccess.boolean}`),
  readyType: () => InferenceError.invalidArg("Invalid value for 'ready': expected a boolean"),
  refusesNamedIndex: false,
};

/** gRPC: Triton's RepositoryModelLoad / RepositoryModelUnload handlers' words. */
export const GRPC_REPOSITORY_WORDS: RepositoryWords = {
  loadParameterType: (key, expected) =>
    InferenceError.invalidArg(`invalid value type for load parameter '${echo(key)}', expected ${expected}_param.`),
  unknownLoadParameter: (key) => InferenceError.invalidArg(`unrecognized load parameter '${echo(key)}'.`),
  unloadDependentsType: () => GrpcRequestErrors.parameterType('unload_dependents', 'bool_param'),
  // Not reachable: RepositoryIndexRequest.ready is a proto bool.
  readyType: () => GrpcRequestErrors.parameterType('ready', 'bool'),
  refusesNamedIndex: true,
};

/** Both protocols: a named repository (Triton serves only the unnamed one). */
export const repositoryNameUnsupported = (): InferenceError =>
  InferenceError.unsupported("'repository_name' specification is not supported");

import { echo } from './echo';
import { InferenceError } from './errors';

const invalid = (message: string): InferenceError => InferenceError.invalidArg(message);

/**
 * The words of client shared memory, in Triton's where it has them (server src/common.h,
 * src/shared_memory_manager.cc, src/http_server.cc, src/grpc/grpc_utils.h, infer_handler.cc).
 * One difference on purpose: a region's key (a file name under /dev/shm) is never repeated in an
 * error. Triton's "Unable to open shared memory region: '<key>'" and its reserved-prefix message
 * echo keys, and a leaked key was the first link of the 2025 chain from an error message to code
 * execution through the python backend's own regions: these name the region instead.
 */
export const SharedMemoryErrors = {
  /** Register/unregister while `--allow-client-shm` is off (Triton 26.05's default). */
  disabled: () =>
    InferenceError.unsupported("Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable."),

  nameRequired: (kind: 'system' | 'cuda') => invalid(`'region name' is necessary to register ${kind} shared memory region`),

  missingField: (field: 'key' | 'byte_size') => invalid(`Shared memory register request has no '${field}' field`),

  alreadyExists: (name: string) => new InferenceError('ALREADY_EXISTS', `shared memory region '${echo(name)}' already in manager`),

  /** Nereid's own rule: a key names a file directly under /dev/shm (Triton: any shm_open name). */
  invalidKey: (name: string) =>
    invalid(
      `cannot register shared memory region '${echo(name)}' - invalid shm key: a key is '/' followed by the name of a ` +
        "shared memory object directly under /dev/shm (no other '/', no '..')",
    ),

  reservedKey: (name: string, prefix: string) =>
    invalid(`cannot register shared memory region '${echo(name)}' as the key contains the reserved prefix '${prefix}'`),

  /** Nereid's own bound on the file descriptors registrations hold. */
  tooManyRegions: (name: string, max: number) =>
    invalid(`cannot register shared memory region '${echo(name)}': ${max} regions are registered, the most this server keeps`),

  /** Triton names the key here; Nereid names the region. */
  cannotOpen: (name: string) => InferenceError.internal(`Unable to open shared memory region: '${echo(name)}'`),

  invalidRegion: (name: string) => InferenceError.internal(`Invalid shared memory region: '${echo(name)}'`),

  registerOutOfBounds: (name: string) => invalid(`failed to register shared memory region '${echo(name)}': invalid args`),

  /** A tensor names a region that is not registered. */
  notFound: (name: string) => InferenceError.notFound(`Unable to find shared memory region: '${echo(name)}'`),

  statusNotFound: (kind: 'system' | 'cuda', name: string) =>
    InferenceError.notFound(`Unable to find ${kind} shared memory region: '${echo(name)}'`),

  registeredAsSystem: (name: string) =>
    InferenceError.notFound(`The region named '${echo(name)}' is registered as system shared memory, not CUDA shared memory`),

  invalidOffset: (name: string) => invalid(`Invalid offset for shared memory region: '${echo(name)}'`),

  outOfBounds: (name: string) => invalid(`Invalid offset + byte size for shared memory region: '${echo(name)}'`),

  /** Nereid's own: the object was truncated after registration (Triton's mapping would fault). */
  truncated: (name: string) =>
    invalid(`Invalid offset + byte size for shared memory region: '${echo(name)}': its object was truncated after it was registered`),

  /** Nereid's own bound (Triton maps the region and reads nothing). */
  inputTooLarge: (input: string, size: number, limit: number) =>
    invalid(
      `shared memory input '${echo(input)}' of ${size} bytes takes the request's inputs past the maximum allowed input size of ${limit} bytes. Use --http-max-input-size to increase the limit.`,
    ),

  outputTooSmall: (output: string, have: number, need: number) =>
    InferenceError.internal(
      `shared memory size specified with the request for output '${echo(output)}' (${have} bytes) should be at least ${need} bytes to hold the results`,
    ),

  /** HTTP's words (ValidateOutputParameter). */
  httpOutputWith: (other: 'classification' | 'binary_data') => invalid(`Output can't set both 'shared_memory_region' and '${other}'`),

  /** gRPC's words (infer_handler.h). */
  grpcOutputWithClassification: () => invalid("output can't set both 'shared_memory_region' and 'classification'"),

  grpcParameterType: (key: string, tensor: string, expected: 'string_param' | 'int64_param') =>
    invalid(`invalid value type for '${key}' parameter for tensor '${echo(tensor)}', expected ${expected}.`),

  grpcWithoutRegion: (key: string, tensor: string) =>
    invalid(`'${key}' can not be specified without 'shared_memory_region' parameter for tensor '${echo(tensor)}'`),

  grpcContentsWithShm: (input: string, model: string) =>
    invalid(`unexpected 'content' provided when using shared memory for input tensor '${echo(input)}' for model '${echo(model)}'`),

  /** Triton without GPU support answers INVALID_ARG; Nereid says UNSUPPORTED (501 / UNIMPLEMENTED). */
  cudaUnsupported: (name: string) =>
    InferenceError.unsupported(`failed to register CUDA shared memory region: '${echo(name)}', GPUs not supported`),
} as const;

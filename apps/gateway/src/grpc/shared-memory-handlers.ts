import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import { echo, InferenceError, UnsupportedErrors } from '@nereid/protocol';
import { unary } from './unary';
import type { WireShmRequest } from './wire-types';

/** Nereid has no client shared memory (and does not list the extensions in server metadata). */
function unsupported(): never {
  throw UnsupportedErrors.sharedMemory();
}

/** Status of no regions: all → empty map; a named region → NOT_FOUND, as for an unknown region. */
function status(kind: 'system' | 'cuda') {
  return unary((r: WireShmRequest) => {
    if (r.name !== '') {
      throw InferenceError.notFound(`Unable to find ${kind} shared memory region: '${echo(r.name)}'`);
    }
    return { regions: {} };
  });
}

/**
 * System and CUDA shared-memory RPCs. Register/Unregister answer UNIMPLEMENTED saying what to do
 * instead; Status lists no regions.
 */
export function sharedMemoryHandlers(): UntypedServiceImplementation {
  return {
    SystemSharedMemoryStatus: status('system'),
    SystemSharedMemoryRegister: unary(unsupported),
    SystemSharedMemoryUnregister: unary(unsupported),
    CudaSharedMemoryStatus: status('cuda'),
    CudaSharedMemoryRegister: unary(unsupported),
    CudaSharedMemoryUnregister: unary(unsupported),
  };
}

import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import { InferenceError } from '@nereid/protocol';
import { unary } from './unary';
import type { WireShmRequest } from './wire-types';

/** Nereid runs like Triton's default `--allow-client-shm=false`: no client shared memory. */
export const SHM_DISABLED_MESSAGE =
  "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.";

function disabled(): never {
  throw InferenceError.unsupported(SHM_DISABLED_MESSAGE);
}

/** Status of no regions: all → empty map; a named region → NOT_FOUND, as for an unknown region. */
function status(kind: 'system' | 'cuda') {
  return unary((r: WireShmRequest) => {
    if (r.name !== '') {
      throw InferenceError.notFound(`Unable to find ${kind} shared memory region: '${r.name}'`);
    }
    return { regions: {} };
  });
}

/**
 * System and CUDA shared-memory RPCs. Register/Unregister answer UNIMPLEMENTED with Triton's
 * "disabled" message (what tritonclient shows when shm is off); Status lists no regions.
 */
export function sharedMemoryHandlers(): UntypedServiceImplementation {
  return {
    SystemSharedMemoryStatus: status('system'),
    SystemSharedMemoryRegister: unary(disabled),
    SystemSharedMemoryUnregister: unary(disabled),
    CudaSharedMemoryStatus: status('cuda'),
    CudaSharedMemoryRegister: unary(disabled),
    CudaSharedMemoryUnregister: unary(disabled),
  };
}

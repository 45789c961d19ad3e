import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import { SystemSharedMemory } from '@nereid/core';
import { SharedMemoryErrors as Errors } from '@nereid/protocol';
import { unary } from './unary';
import type { WireShmRegisterRequest, WireShmRequest } from './wire-types';

/** `regions` of a status response: name → RegionStatus (proto field names; uint64 as decimal strings). */
function systemStatus(shm: SystemSharedMemory, name: string) {
  const regions: Record<string, { name: string; key: string; offset: string; byte_size: string }> = {};
  for (const r of shm.status(name)) {
    regions[r.name] = { name: r.name, key: r.key, offset: String(r.offset), byte_size: String(r.byte_size) };
  }
  return { regions };
}

/**
 * System and CUDA shared-memory RPCs over the server's regions. `name` "" means every region in
 * Status and Unregister, as in Triton. Register and Unregister answer UNIMPLEMENTED in Triton's
 * words unless the server runs with `--allow-client-shm=true`; CUDA regions need a GPU this server
 * does not use.
 */
export function sharedMemoryHandlers(sharedMemory?: SystemSharedMemory): UntypedServiceImplementation {
  const shm = sharedMemory ?? new SystemSharedMemory({ enabled: false });
  return {
    SystemSharedMemoryStatus: unary((r: WireShmRequest) => systemStatus(shm, r.name)),
    SystemSharedMemoryRegister: unary((r: WireShmRegisterRequest) => {
      if (!shm.enabled) throw Errors.disabled();
      shm.register(r.name, r.key, r.offset, r.byte_size);
      return {};
    }),
    SystemSharedMemoryUnregister: unary((r: WireShmRequest) => {
      shm.unregister(r.name);
      return {};
    }),
    CudaSharedMemoryStatus: unary((r: WireShmRequest) => {
      if (r.name === '') return { regions: {} };
      throw shm.has(r.name) ? Errors.registeredAsSystem(r.name) : Errors.statusNotFound('cuda', r.name);
    }),
    CudaSharedMemoryRegister: unary((r: WireShmRequest) => {
      if (!shm.enabled) throw Errors.disabled();
      if (r.name === '') throw Errors.nameRequired('cuda');
      throw Errors.cudaUnsupported(r.name);
    }),
    CudaSharedMemoryUnregister: unary(() => {
      if (!shm.enabled) throw Errors.disabled();
      return {};
    }),
  };
}

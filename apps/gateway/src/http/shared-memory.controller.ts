import { Body, Controller, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { SystemSharedMemory, type SystemRegionStatus } from '@nereid/core';
import { HttpRequestErrors, JsonAccess, SharedMemoryErrors as Errors } from '@nereid/protocol';
import { GATEWAY_OPTIONS, type GatewayOptions } from '../tokens';
import { parseJsonBody } from './body';

/** An unsigned JSON member of a register body (Triton's AsUInt), or `fallback` when absent. */
function unsignedMember(body: Record<string, unknown>, key: string, fallback?: number): number | undefined {
  const v = body[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw HttpRequestErrors.unableToParse(key, JsonAccess.unsigned);
  return v;
}

/**
 * Triton's shared-memory extensions over HTTP. System regions are served when the server runs with
 * `--allow-client-shm=true` (registration is refused otherwise, in Triton's words); CUDA regions
 * need a GPU this server does not use: their registration answers UNSUPPORTED, their status lists
 * none.
 */
@Controller('v2')
export class SharedMemoryController {
  private readonly shm: SystemSharedMemory;

  constructor(@Inject(GATEWAY_OPTIONS) options: GatewayOptions) {
    this.shm = options.sharedMemory ?? new SystemSharedMemory({ enabled: false });
  }

  @Get('systemsharedmemory/status')
  systemStatus(): SystemRegionStatus[] {
    return this.shm.status();
  }

  @Get('systemsharedmemory/region/:region/status')
  systemRegion(@Param('region') region: string): SystemRegionStatus[] {
    return this.shm.status(region);
  }

  @Post('systemsharedmemory/region/:region/register')
  @HttpCode(200)
  register(@Param('region') region: string, @Body() body: unknown): void {
    if (!this.shm.enabled) throw Errors.disabled();
    const json = parseJsonBody(body) ?? {};
    if (json.key === undefined) throw Errors.missingField('key');
    if (typeof json.key !== 'string') throw HttpRequestErrors.unableToParse('key', JsonAccess.string);
    const offset = unsignedMember(json, 'offset', 0)!;
    if (json.byte_size === undefined) throw Errors.missingField('byte_size');
    const byteSize = unsignedMember(json, 'byte_size')!;
    this.shm.register(region, json.key, offset, byteSize);
  }

  @Post('systemsharedmemory/unregister')
  @HttpCode(200)
  unregisterAll(): void {
    this.shm.unregister();
  }

  @Post('systemsharedmemory/region/:region/unregister')
  @HttpCode(200)
  unregister(@Param('region') region: string): void {
    this.shm.unregister(region);
  }

  @Get('cudasharedmemory/status')
  cudaStatus(): unknown[] {
    return [];
  }

  @Get('cudasharedmemory/region/:region/status')
  cudaRegion(@Param('region') region: string): never {
    throw this.shm.has(region) ? Errors.registeredAsSystem(region) : Errors.statusNotFound('cuda', region);
  }

  @Post('cudasharedmemory/region/:region/register')
  @HttpCode(200)
  cudaRegister(@Param('region') region: string): never {
    if (!this.shm.enabled) throw Errors.disabled();
    throw Errors.cudaUnsupported(region);
  }

  /** No CUDA region is ever registered: unregistering one (or all) has nothing to do, as in Triton. */
  @Post(['cudasharedmemory/unregister', 'cudasharedmemory/region/:region/unregister'])
  @HttpCode(200)
  cudaUnregister(): void {
    if (!this.shm.enabled) throw Errors.disabled();
  }
}

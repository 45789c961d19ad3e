import { Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { InferenceError } from '@nereid/protocol';

const DISABLED = "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.";

/**
 * The shared-memory extensions. Nereid does not map client shared memory (yet): status lists no
 * region and register/unregister answer Triton's "disabled" error, which clients handle.
 */
@Controller('v2')
export class SharedMemoryController {
  @Get(['systemsharedmemory/status', 'cudasharedmemory/status'])
  status(): unknown[] {
    return [];
  }

  @Get('systemsharedmemory/region/:region/status')
  systemRegion(@Param('region') region: string): never {
    throw InferenceError.notFound(`Unable to find system shared memory region: '${region}'`);
  }

  @Get('cudasharedmemory/region/:region/status')
  cudaRegion(@Param('region') region: string): never {
    throw InferenceError.notFound(`Unable to find cuda shared memory region: '${region}'`);
  }

  @Post([
    'systemsharedmemory/region/:region/register',
    'cudasharedmemory/region/:region/register',
    'systemsharedmemory/unregister',
    'systemsharedmemory/region/:region/unregister',
    'cudasharedmemory/unregister',
    'cudasharedmemory/region/:region/unregister',
  ])
  @HttpCode(200)
  change(): never {
    throw InferenceError.unsupported(DISABLED);
  }
}

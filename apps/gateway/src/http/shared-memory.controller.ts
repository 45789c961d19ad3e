import { Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { echo, InferenceError, UnsupportedErrors } from '@nereid/protocol';

/**
 * The shared-memory endpoints. Nereid does not map client shared memory (and does not list the
 * extensions in server metadata): status lists no region, and register/unregister answer 501
 * UNSUPPORTED saying what to do instead.
 */
@Controller('v2')
export class SharedMemoryController {
  @Get(['systemsharedmemory/status', 'cudasharedmemory/status'])
  status(): unknown[] {
    return [];
  }

  @Get('systemsharedmemory/region/:region/status')
  systemRegion(@Param('region') region: string): never {
    throw InferenceError.notFound(`Unable to find system shared memory region: '${echo(region)}'`);
  }

  @Get('cudasharedmemory/region/:region/status')
  cudaRegion(@Param('region') region: string): never {
    throw InferenceError.notFound(`Unable to find cuda shared memory region: '${echo(region)}'`);
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
    throw UnsupportedErrors.sharedMemory();
  }
}

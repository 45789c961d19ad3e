import { Module, type DynamicModule } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import type { InferenceCore } from '@nereid/core';
import { HealthController } from './http/health.controller';
import { ModelsController } from './http/models.controller';
import { ServerController } from './http/server.controller';
import { SharedMemoryController } from './http/shared-memory.controller';
import { GATEWAY_OPTIONS, INFERENCE_CORE, type GatewayOptions } from './tokens';

/** The HTTP front door over an InferenceCore (embedded or remote). */
@Module({})
export class GatewayModule {
  static register(core: InferenceCore, options: GatewayOptions): DynamicModule {
    return {
      module: GatewayModule,
      imports: [TerminusModule.forRoot({ logger: false })],
      controllers: [HealthController, ServerController, SharedMemoryController, ModelsController],
      providers: [
        { provide: INFERENCE_CORE, useValue: core },
        { provide: GATEWAY_OPTIONS, useValue: options },
      ],
    };
  }
}

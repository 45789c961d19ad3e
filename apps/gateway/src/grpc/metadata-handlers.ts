import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import type { InferenceCore } from '@nereid/core';
import { unary } from './unary';
import { parseModelVersion } from './version';
import type { WireNameVersion } from './wire-types';

type Empty = Record<string, never>;

/** Health, metadata, config and statistics RPCs: thin calls into the core. */
export function metadataHandlers(core: InferenceCore): UntypedServiceImplementation {
  return {
    ServerLive: unary<Empty, { live: boolean }>(() => ({ live: core.isLive() })),
    ServerReady: unary<Empty, { ready: boolean }>(() => ({ ready: core.isReady() })),
    ModelReady: unary((r: WireNameVersion) => ({
      ready: core.isModelReady(r.name, parseModelVersion(r.version)),
    })),
    ServerMetadata: unary(() => core.serverMetadata()),
    ModelMetadata: unary((r: WireNameVersion) => core.modelMetadata(r.name, parseModelVersion(r.version))),
    // The core's ModelConfig is already the proto JSON form (proto field names, enums by name),
    // which is what proto-loader's encoder takes.
    ModelConfig: unary((r: WireNameVersion) => ({
      config: core.modelConfig(r.name, parseModelVersion(r.version)),
    })),
    ModelStatistics: unary(async (r: WireNameVersion) => ({
      model_stats: await core.statistics(r.name, parseModelVersion(r.version)),
    })),
  };
}

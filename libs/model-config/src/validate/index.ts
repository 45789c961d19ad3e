import type { ModelConfig } from '../types';
import { invalid } from './common';
import { validateDynamicBatching } from './dynamic-batching';
import { validateEnsemble } from './ensemble';
import { validateInstanceGroups } from './instance-groups';
import { validateBatchInputs, validateInputsOutputs } from './io';
import { validatePlatformBackend } from './platform';
import { validateSequenceBatching } from './sequence-batching';
import { validateWarmup } from './warmup';

export interface ValidateOptions {
  /** Backends this server can run (names as in `backend`). */
  knownBackends: string[];
  /** GPUs this server may use. */
  gpuCount: number;
}

function validateResponseCache(config: ModelConfig): void {
  if (!config.response_cache?.enable) return;
  const model = config.name ?? '';
  if (config.model_transaction_policy?.decoupled) {
    invalid(`Response Cache does not currently support model ${model} with 'decoupled' transaction policy. Please disable the response cache.`);
  }
  if (config.sequence_batching) {
    invalid(`Response Cache does not currently support model ${model} with sequence batching scheduler. Please disable the response cache.`);
  }
}

/**
 * Checks a completed, normalized config with Triton's wording (model-config.md §5, §7–§11, §14).
 * Throws INVALID_ARG on the first problem found.
 */
export function validateModelConfig(config: ModelConfig, opts: ValidateOptions): void {
  if (!config.name) invalid("model configuration must specify 'name'");
  validatePlatformBackend(config, opts.knownBackends);
  if ((config.max_batch_size ?? 0) < 0) invalid(`'max_batch_size' must be non-negative value for ${config.name}`);
  validateInputsOutputs(config);
  validateBatchInputs(config);
  validateEnsemble(config);
  validateDynamicBatching(config);
  validateSequenceBatching(config);
  validateInstanceGroups(config, opts.gpuCount);
  validateWarmup(config);
  validateResponseCache(config);
}

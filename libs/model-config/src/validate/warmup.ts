import type { ModelConfig, ModelWarmup, ModelWarmupInput } from '../types';
import { invalid, missingDataType } from './common';

/**
 * The most elements a warmup input may have, its batch included: its byte size must be counted
 * exactly before anything is allocated (2^53 - 1 over the largest element, 8 bytes). The server
 * bounds a sample's bytes further when it builds it (`--http-max-input-size`).
 */
const MAX_WARMUP_ELEMENTS = Math.floor(Number.MAX_SAFE_INTEGER / 8);

function validateWarmupInput(input: ModelWarmupInput, where: string, batchSize: number): void {
  if (missingDataType(input.data_type)) invalid(`${where} must specify 'data_type'`);
  const dims = input.dims ?? [];
  if (!dims.every((d) => Number.isInteger(d) && d >= 1)) {
    invalid(`${where} must give every dimension as an integer >= 1 (variable-size dimensions must be specified)`);
  }
  // Dims are >= 1 here: the running product only grows, so it can stop once past the bound.
  let count = Math.max(1, batchSize);
  for (const d of dims) if (count <= MAX_WARMUP_ELEMENTS) count *= d;
  if (count > MAX_WARMUP_ELEMENTS) {
    invalid(`${where} has dims [${dims.join(',')}] with more than ${MAX_WARMUP_ELEMENTS} elements in a batch of ${Math.max(1, batchSize)}`);
  }
  if (input.zero_data === undefined && input.random_data === undefined && input.input_data_file === undefined) {
    invalid(`${where} must specify one of 'zero_data', 'random_data' or 'input_data_file'`);
  }
}

function validateSample(sample: ModelWarmup, model: string, maxBatchSize: number): void {
  const name = sample.name ?? '';
  if (!name) invalid(`model warmup setting for ${model} must specify 'name'`);
  const where = `model warmup setting '${name}' for ${model}`;
  const batchSize = sample.batch_size ?? 0;
  if (batchSize < 1) invalid(`${where} must specify 'batch_size' >= 1`);
  const limit = Math.max(1, maxBatchSize);
  if (batchSize > limit) invalid(`${where} has 'batch_size' ${batchSize} greater than the model's maximum batch size ${limit}`);
  for (const [inputName, input] of Object.entries(sample.inputs ?? {})) {
    validateWarmupInput(input, `${where}: input '${inputName}'`, maxBatchSize > 0 ? batchSize : 1);
  }
}

/** Basic warmup checks (model-config.md §11) that need only this config. */
export function validateWarmup(config: ModelConfig): void {
  for (const sample of config.model_warmup ?? []) validateSample(sample, config.name ?? '', config.max_batch_size ?? 0);
}

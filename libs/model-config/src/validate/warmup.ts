import type { ModelConfig, ModelWarmup, ModelWarmupInput } from '../types';
import { invalid, missingDataType } from './common';

function validateWarmupInput(input: ModelWarmupInput, where: string): void {
  if (missingDataType(input.data_type)) invalid(`${where} must specify 'data_type'`);
  if (!(input.dims ?? []).every((d) => Number.isInteger(d) && d >= 1)) {
    invalid(`${where} must give every dimension as an integer >= 1 (variable-size dimensions must be specified)`);
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
    validateWarmupInput(input, `${where}: input '${inputName}'`);
  }
}

/** Basic warmup checks (model-config.md §11) that need only this config. */
export function validateWarmup(config: ModelConfig): void {
  for (const sample of config.model_warmup ?? []) validateSample(sample, config.name ?? '', config.max_batch_size ?? 0);
}

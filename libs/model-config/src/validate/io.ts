import type { ModelConfig, ModelInput, ModelOutput } from '../types';
import { DIM_RULE, invalid, isValidDim, missingDataType } from './common';

/** Checks of `ModelInput`/`ModelOutput` shared by both (Triton's ValidateIOShape wording). */
function validateTensor(prefix: string, io: ModelInput | ModelOutput, maxBatchSize: number): void {
  const name = io.name ?? '';
  if (!name) invalid(`${prefix}must specify 'name'`);
  if (missingDataType(io.data_type)) invalid(`${prefix}'${name}' must specify 'data_type'`);
  const dims = io.dims ?? [];
  if (dims.length === 0) invalid(`${prefix}'${name}' must specify 'dims'`);
  if (!dims.every(isValidDim)) invalid(`${prefix}'${name}' ${DIM_RULE}`);
  if (io.reshape === undefined) return;
  const shape = io.reshape.shape ?? [];
  if (!shape.every(isValidDim)) invalid(`${prefix}'${name}' reshape ${DIM_RULE}`);
  if (!reshapeMatches(dims, shape, maxBatchSize)) invalid(`${prefix}'${name}' has different size for dims and reshape`);
}

/** Same element count: the same number of -1 wildcards and the same product of fixed dims. */
function reshapeMatches(dims: number[], shape: number[], maxBatchSize: number): boolean {
  const fixed = (xs: number[]): number => xs.filter((d) => d !== -1).reduce((a, b) => a * b, 1);
  const wildcards = (xs: number[]): number => xs.filter((d) => d === -1).length;
  if (shape.length === 0) return maxBatchSize > 0 && wildcards(dims) === 0 && fixed(dims) === 1;
  return wildcards(dims) === wildcards(shape) && fixed(dims) === fixed(shape);
}

function checkUnique(kind: string, names: string[], model: string): void {
  const seen = new Set<string>();
  for (const n of names) {
    if (seen.has(n)) invalid(`${kind} '${n}' is specified more than once for ${model}`);
    seen.add(n);
  }
}

export function validateInputsOutputs(config: ModelConfig): void {
  const model = config.name ?? '';
  const mbs = config.max_batch_size ?? 0;
  for (const input of config.input ?? []) {
    validateTensor('model input ', input, mbs);
    const format = input.format ?? 'FORMAT_NONE';
    if (format !== 'FORMAT_NONE' && (input.dims ?? []).length !== 3) invalid(`model input NHWC/NCHW require 3 dims for ${model}`);
  }
  for (const output of config.output ?? []) validateTensor('model output ', output, mbs);
  checkUnique('model input', (config.input ?? []).map((i) => i.name ?? ''), model);
  checkUnique('model output', (config.output ?? []).map((o) => o.name ?? ''), model);
}

export function validateBatchInputs(config: ModelConfig): void {
  for (const bi of config.batch_input ?? []) {
    if (bi.data_type !== 'TYPE_INT32' && bi.data_type !== 'TYPE_FP32') invalid('batch input data type must be TYPE_INT32 or TYPE_FP32');
  }
}

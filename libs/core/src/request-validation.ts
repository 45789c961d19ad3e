import type { ModelConfig, ModelInput } from '@nereid/model-config';
import { CoreRequestErrors as Errors, ModelIoErrors, type InferenceError, type InferenceRequest } from '@nereid/protocol';
import { fromConfigType } from '@nereid/tensor';

/** Indexes of a config's inputs and outputs, built once per loaded model. */
export interface ModelIo {
  inputs: Map<string, ModelInput>;
  outputs: Set<string>;
  required: string[];
}

export function modelIo(config: ModelConfig): ModelIo {
  const inputs = new Map<string, ModelInput>();
  for (const i of config.input ?? []) inputs.set(i.name ?? '', i);
  // A state output is the client's to ask for only when `output` lists it too (Triton: for
  // debugging); the sequence batcher asks for the others itself, after validation.
  const outputs = new Set<string>((config.output ?? []).map((o) => o.name ?? ''));
  const required = (config.input ?? []).filter((i) => !i.optional).map((i) => i.name ?? '');
  return { inputs, outputs, required };
}

/** `got` from index `from` on against the config's dims (-1 matches any size). */
function dimsMatch(expected: readonly number[], got: readonly number[], from: number): boolean {
  if (expected.length !== got.length - from) return false;
  for (let i = 0; i < expected.length; i++) {
    if (expected[i] !== -1 && expected[i] !== got[i + from]) return false;
  }
  return true;
}

/** The first name of `items` that an earlier item already has; undefined when all differ. */
function firstDuplicate(items: readonly { name: string }[]): string | undefined {
  // Requests usually carry a handful of tensors: a scan costs less than a Set per request.
  const seen = items.length > 16 ? new Set<string>() : undefined;
  for (let k = 0; k < items.length; k++) {
    const name = items[k].name;
    if (seen ? seen.has(name) : items.findIndex((u) => u.name === name) < k) return name;
    seen?.add(name);
  }
  return undefined;
}

/** Duplicate input or requested-output names (Triton refuses them as they are added). */
function checkDuplicates(request: InferenceRequest): void {
  const input = firstDuplicate(request.inputs);
  if (input !== undefined) throw Errors.inputAlreadyExists(request.id, input);
  const output = request.outputs ? firstDuplicate(request.outputs) : undefined;
  if (output !== undefined) throw Errors.outputAlreadyExists(request.id, output);
}

/** Too many inputs, or a required one missing: Triton's count message, whichever the cause. */
function countError(request: InferenceRequest, io: ModelIo, model: string): InferenceError {
  const got = request.inputs.map((t) => t.name);
  const missing = io.required.filter((n) => !got.includes(n));
  return Errors.inputCount(request.id, model, io.inputs.size, io.required.length, got, missing);
}

/**
 * Checks a request against the model's config in Triton's order (`InferenceRequest::Normalize`):
 * duplicate names, requested outputs, the number of inputs, each input's name and batch
 * dimension, the batch size, then each input's datatype and shape. Element counts vs shapes were
 * checked when the tensors were decoded. Throws INVALID_ARG with Triton's words.
 */
export function validateRequest(request: InferenceRequest, config: ModelConfig, io: ModelIo): void {
  const model = config.name ?? request.modelName;
  const maxBatch = config.max_batch_size ?? 0;
  const inputs = request.inputs;
  checkDuplicates(request);
  if (request.outputs) {
    for (const o of request.outputs) {
      if (!io.outputs.has(o.name)) throw ModelIoErrors.unexpectedOutput(o.name, model);
    }
  }
  if (inputs.length > io.inputs.size || inputs.length < io.required.length) {
    throw countError(request, io, model);
  }
  let batchSize = -1;
  let requiredSeen = 0;
  for (let k = 0; k < inputs.length; k++) {
    const t = inputs[k];
    const spec = io.inputs.get(t.name);
    if (!spec) throw ModelIoErrors.unexpectedInput(t.name, model);
    if (!spec.optional) requiredSeen++;
    if (maxBatch > 0) {
      if (t.shape.length === 0) throw Errors.noShapeForBatch(request.id, t.name, model);
      const b = t.shape[0];
      if (batchSize === -1) batchSize = b;
      else if (b !== batchSize) throw Errors.batchSizeMismatch(request.id, t.name, model);
    }
  }
  // Triton checks the count only; a required input left out for an optional one is caught here.
  if (requiredSeen < io.required.length) throw countError(request, io, model);
  if (maxBatch > 0 && batchSize !== -1) {
    if (batchSize > maxBatch) throw Errors.batchSizeTooLarge(request.id, maxBatch, model);
    if (batchSize < 1) throw Errors.batchSizeTooSmall(request.id, model);
  }
  for (let k = 0; k < inputs.length; k++) {
    const t = inputs[k];
    const spec = io.inputs.get(t.name) as ModelInput;
    const want = fromConfigType(spec.data_type ?? '');
    if (want !== t.datatype) {
      throw Errors.datatypeMismatch(request.id, t.name, t.datatype, model, want ?? spec.data_type ?? '');
    }
    const dims = spec.dims ?? [];
    if (!dimsMatch(dims, t.shape, maxBatch > 0 ? 1 : 0)) {
      const expected = maxBatch > 0 ? [-1, ...dims] : dims;
      throw Errors.unexpectedShape(request.id, t.name, model, expected, t.shape, maxBatch > 0);
    }
  }
}

/** Batch size of a validated request (1 for models that do not batch). */
export function requestBatchSize(request: InferenceRequest, config: ModelConfig): number {
  if ((config.max_batch_size ?? 0) <= 0) return 1;
  return request.inputs[0]?.shape[0] ?? 1;
}

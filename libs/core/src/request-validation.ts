import type { ModelConfig, ModelInput } from '@nereid/model-config';
import { InferenceError, type InferenceRequest } from '@nereid/protocol';
import { fromConfigType } from '@nereid/tensor';

function fmtShape(shape: readonly number[]): string {
  return `[${shape.join(',')}]`;
}

function prefix(request: InferenceRequest): string {
  return `[request id: ${request.id || '<id_unknown>'}] `;
}

/** Indexes of a config's inputs and outputs, built once per loaded model. */
export interface ModelIo {
  inputs: Map<string, ModelInput>;
  outputs: Set<string>;
  /** Names of sequence control inputs and state inputs: filled by the server, never by clients. */
  serverInputs: Set<string>;
  required: string[];
}

export function modelIo(config: ModelConfig): ModelIo {
  const inputs = new Map<string, ModelInput>();
  for (const i of config.input ?? []) inputs.set(i.name ?? '', i);
  const serverInputs = new Set<string>();
  for (const c of config.sequence_batching?.control_input ?? []) serverInputs.add(c.name ?? '');
  for (const s of config.sequence_batching?.state ?? []) serverInputs.add(s.input_name ?? '');
  const outputs = new Set<string>((config.output ?? []).map((o) => o.name ?? ''));
  for (const s of config.sequence_batching?.state ?? []) outputs.add(s.output_name ?? '');
  const required = (config.input ?? []).filter((i) => !i.optional).map((i) => i.name ?? '');
  return { inputs, outputs, serverInputs, required };
}

function dimsMatch(expected: readonly number[], got: readonly number[]): boolean {
  if (expected.length !== got.length) return false;
  for (let i = 0; i < expected.length; i++) {
    if (expected[i] !== -1 && expected[i] !== got[i]) return false;
  }
  return true;
}

/**
 * Checks a request against the model's config: input names, duplicates, required inputs,
 * datatypes, shapes and batch size, requested outputs. Element counts vs shapes were checked when
 * the tensors were decoded. Throws INVALID_ARG with Triton's wording.
 */
export function validateRequest(request: InferenceRequest, config: ModelConfig, io: ModelIo): void {
  const model = config.name ?? request.modelName;
  const maxBatch = config.max_batch_size ?? 0;
  const inputs = request.inputs;
  let batchSize = -1;
  let requiredSeen = 0;
  // Requests usually carry a handful of inputs: a scan costs less than a Set per request.
  const seen = inputs.length > 16 ? new Set<string>() : undefined;
  for (let k = 0; k < inputs.length; k++) {
    const t = inputs[k];
    if (seen ? seen.has(t.name) : inputs.findIndex((u) => u.name === t.name) < k) {
      throw InferenceError.invalidArg(`${prefix(request)}input '${t.name}' already exists in request`);
    }
    seen?.add(t.name);
    const spec = io.inputs.get(t.name);
    if (!spec) {
      throw InferenceError.invalidArg(`${prefix(request)}unexpected inference input '${t.name}' for model '${model}'`);
    }
    if (!spec.optional) requiredSeen++;
    const want = fromConfigType(spec.data_type ?? '');
    if (want !== t.datatype) {
      throw InferenceError.invalidArg(
        `${prefix(request)}inference input '${t.name}' data-type is '${t.datatype}', but model '${model}' expects '${want ?? spec.data_type}'`,
      );
    }
    const dims = spec.dims ?? [];
    if (maxBatch > 0) {
      if (t.shape.length === 0) {
        throw InferenceError.invalidArg(
          `${prefix(request)}unexpected shape for input '${t.name}' for model '${model}'. Expected ${fmtShape([-1, ...dims])}, got ${fmtShape(t.shape)}`,
        );
      }
      const b = t.shape[0];
      if (batchSize === -1) batchSize = b;
      else if (b !== batchSize) {
        throw InferenceError.invalidArg(
          `${prefix(request)}input '${t.name}' batch size does not match other inputs for '${model}'`,
        );
      }
      if (!dimsMatch(dims, t.shape.slice(1))) {
        throw InferenceError.invalidArg(
          `${prefix(request)}unexpected shape for input '${t.name}' for model '${model}'. Expected ${fmtShape([-1, ...dims])}, got ${fmtShape(t.shape)}`,
        );
      }
    } else if (!dimsMatch(dims, t.shape)) {
      throw InferenceError.invalidArg(
        `${prefix(request)}unexpected shape for input '${t.name}' for model '${model}'. Expected ${fmtShape(dims)}, got ${fmtShape(t.shape)}`,
      );
    }
  }
  if (requiredSeen < io.required.length) {
    const missing = io.required.filter((n) => !inputs.some((t) => t.name === n));
    throw InferenceError.invalidArg(
      `${prefix(request)}expected ${io.required.length} inputs but got ${request.inputs.length} inputs for model '${model}'. ` +
        `Got input(s) [${request.inputs.map((t) => `'${t.name}'`).join(', ')}], but missing required input(s) ` +
        `[${missing.map((n) => `'${n}'`).join(', ')}]. Please provide all required input(s).`,
    );
  }
  if (maxBatch > 0 && batchSize !== -1) {
    if (batchSize > maxBatch) {
      throw InferenceError.invalidArg(
        `${prefix(request)}inference request batch-size must be <= ${maxBatch} for '${model}'`,
      );
    }
    if (batchSize < 1 && request.inputs.length > 0) {
      throw InferenceError.invalidArg(`${prefix(request)}inference request batch-size must be >= 1 for '${model}'`);
    }
  }
  if (request.outputs) {
    const names = new Set<string>();
    for (const o of request.outputs) {
      if (!io.outputs.has(o.name)) {
        throw InferenceError.invalidArg(`${prefix(request)}unexpected inference output '${o.name}' for model '${model}'`);
      }
      if (names.has(o.name)) {
        throw InferenceError.invalidArg(`${prefix(request)}output '${o.name}' already requested`);
      }
      names.add(o.name);
    }
  }
}

/** Batch size of a validated request (1 for models that do not batch). */
export function requestBatchSize(request: InferenceRequest, config: ModelConfig): number {
  if ((config.max_batch_size ?? 0) <= 0) return 1;
  return request.inputs[0]?.shape[0] ?? 1;
}

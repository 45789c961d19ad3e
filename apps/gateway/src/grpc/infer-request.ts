import {
  applyRequestParameters,
  InferenceError,
  newInferenceRequest,
  type InferenceRequest,
  type Parameters,
  type RequestedOutput,
} from '@nereid/protocol';
import {
  isDataType,
  tensorDataFromBytes,
  tensorDataFromContents,
  type DataType,
  type Tensor,
  type TensorData,
} from '@nereid/tensor';
import { customValue, decodeRequestParameters, longValue } from './infer-parameters';
import { parseModelVersion } from './version';
import type {
  WireInferInputTensor,
  WireLong,
  WireModelInferRequest,
  WireParameters,
  WireRequestedOutput,
  WireTensorContents,
} from './wire-types';

/** A decoded ModelInferRequest: the core's request plus the gRPC-only streaming option. */
export interface DecodedInferRequest {
  request: InferenceRequest;
  /** `triton_enable_empty_final_response`: send an empty final response on streams. */
  enableEmptyFinalResponse: boolean;
}

function decodeShape(shape: readonly WireLong[], name: string, model: string): number[] {
  const out = new Array<number>(shape.length);
  for (let i = 0; i < shape.length; i++) {
    const d = Number(shape[i]);
    if (!Number.isSafeInteger(d) || d < 0) {
      throw InferenceError.invalidArg(
        `unexpected shape for input '${name}' for model '${model}'. Dimensions must be non-negative, got [${shape.join(',')}]`,
      );
    }
    out[i] = d;
  }
  return out;
}

function decodeDatatype(datatype: string, name: string, model: string): DataType {
  if (isDataType(datatype)) return datatype;
  throw InferenceError.invalidArg(
    `invalid datatype '${datatype}' for input '${name}' for model '${model}'`,
  );
}

function hasContents(c: WireTensorContents | null): c is WireTensorContents {
  if (!c) return false;
  for (const v of Object.values(c)) {
    if (Array.isArray(v) && v.length > 0) return true;
  }
  return false;
}

/**
 * A plain Uint8Array over the same memory. Buffer's `slice()` is a view, not a copy, so code that
 * copies a misaligned tensor with `.slice()` must get a true Uint8Array.
 */
function plainBytes(b: Buffer): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

function decodeInput(input: WireInferInputTensor, raw: Buffer | undefined, model: string): Tensor {
  const { name } = input;
  const datatype = decodeDatatype(input.datatype, name, model);
  const shape = decodeShape(input.shape, name, model);
  let data: TensorData;
  if (raw !== undefined) {
    if (hasContents(input.contents)) {
      throw InferenceError.invalidArg(
        `contents field must not be specified when using raw_input_contents for '${name}' for model '${model}'`,
      );
    }
    data = tensorDataFromBytes(datatype, shape, plainBytes(raw), name, model);
  } else {
    data = tensorDataFromContents(datatype, shape, input.contents ?? {}, name, model);
  }
  return { name, datatype, shape, data };
}

function decodeInputs(msg: WireModelInferRequest): Tensor[] {
  const raw = msg.raw_input_contents;
  const model = msg.model_name;
  if (raw.length > 0 && raw.length !== msg.inputs.length) {
    throw InferenceError.invalidArg(
      `expected ${msg.inputs.length} raw_input_contents entries (one per input) for model '${model}', got ${raw.length}`,
    );
  }
  const useRaw = raw.length > 0;
  return msg.inputs.map((input, i) => decodeInput(input, useRaw ? raw[i] : undefined, model));
}

function classificationOf(name: string, params: WireParameters): number | undefined {
  const p = params.classification;
  if (p === undefined) return undefined;
  if (p.parameter_choice !== 'int64_param') {
    throw InferenceError.invalidArg(`invalid value type for 'classification' parameter, expected int64_param.`);
  }
  const n = Number(longValue(p.int64_param));
  if (n <= 0) {
    throw InferenceError.invalidArg(
      `invalid value for 'classification' parameter of output '${name}', expected a value > 0, got ${n}`,
    );
  }
  return n;
}

/** Output parameters other than classification and `binary_data` (kept for the core to judge). */
function outputParameters(params: WireParameters): Parameters | undefined {
  let out: Parameters | undefined;
  for (const key of Object.keys(params)) {
    if (key === 'classification' || key === 'binary_data') continue;
    const v = customValue(key, params[key]);
    if (v === undefined) continue;
    (out ??= {})[key] = v;
  }
  return out;
}

function decodeOutput(o: WireRequestedOutput): RequestedOutput {
  const out: RequestedOutput = { name: o.name };
  const classification = classificationOf(o.name, o.parameters);
  if (classification !== undefined) out.classification = classification;
  const parameters = outputParameters(o.parameters);
  if (parameters) out.parameters = parameters;
  return out;
}

/**
 * ModelInferRequest → the core's InferenceRequest. Decodes only the wire format (version string,
 * parameters, tensor bytes); model-level validation is the core's.
 */
export function decodeInferRequest(msg: WireModelInferRequest): DecodedInferRequest {
  const params = decodeRequestParameters(msg.parameters);
  const request = newInferenceRequest(msg.model_name, parseModelVersion(msg.model_version));
  request.id = msg.id;
  applyRequestParameters(request, params.values);
  request.inputs = decodeInputs(msg);
  if (msg.outputs.length > 0) request.outputs = msg.outputs.map(decodeOutput);
  return { request, enableEmptyFinalResponse: params.enableEmptyFinalResponse };
}

import {
  applyRequestParameters,
  InferenceError,
  newInferenceRequest,
  type InferenceRequest,
  type InferenceResponse,
  type ParameterValue,
  type RequestedOutput,
} from '@nereid/protocol';
import {
  decodeJsonData,
  ELEMENT_SIZE,
  encodeJsonData,
  isDataType,
  tensorDataFromBytes,
  tensorDataToBytes,
  type Tensor,
} from '@nereid/tensor';
import { checkInferStructure } from './infer-dto';

const ONE_SOURCE =
  "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', " +
  "'shared_memory_region' in 'parameters'.";

/** How the response should carry each output. */
export interface OutputForm {
  defaultBinary: boolean;
  /** Per requested output: true = binary section, false = JSON. */
  binary: Map<string, boolean>;
}

export interface DecodedInfer {
  request: InferenceRequest;
  form: OutputForm;
}

/** A raw-binary request (header length 0) needs the model's single input. */
export interface RawInputInfo {
  name: string;
  datatype: string;
  /** Shape as metadata reports it (batch dim as -1 when batching). */
  shape: number[];
}

function paramValue(key: string, v: unknown): ParameterValue {
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  throw InferenceError.invalidArg(`parameter '${key}' has an invalid type: expected a string, a number or a boolean`);
}

function parseParams(raw: Record<string, unknown> | undefined): Record<string, ParameterValue> | undefined {
  if (!raw) return undefined;
  const out: Record<string, ParameterValue> = {};
  for (const k of Object.keys(raw)) {
    const v = raw[k];
    if (v === null || v === undefined) continue;
    out[k] = paramValue(k, v);
  }
  return out;
}

function parseHeaderLength(value: string | undefined, bodyLength: number): number | undefined {
  if (value === undefined) return undefined;
  const n = /^\s*-?[0-9]+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < 0 || n > 2147483647 || n > bodyLength) {
    throw InferenceError.invalidArg(
      `Unable to parse 'Inference-Header-Content-Length': expected an integer between 0 and the body size (${bodyLength}), got '${value}'`,
    );
  }
  return n;
}

function parseJson(text: Buffer): unknown {
  try {
    return JSON.parse(text.toString('utf8'));
  } catch (e) {
    throw InferenceError.invalidArg(`failed to parse the request JSON buffer: ${(e as Error).message}`);
  }
}

/** Raw binary request: the whole body is the data of the model's only input. */
function decodeRawBinary(body: Buffer, model: string, version: number, raw: RawInputInfo | undefined): DecodedInfer {
  if (!raw) {
    throw InferenceError.invalidArg(`Raw request must only have 1 input (found 0 or several) to be deduced but got model '${model}'`);
  }
  if (!isDataType(raw.datatype)) throw InferenceError.invalidArg(`unsupported datatype '${raw.datatype}'`);
  const request = newInferenceRequest(model, version);
  let shape: number[];
  if (raw.datatype === 'BYTES') {
    shape = raw.shape.map((d, i) => (i === 0 && d === -1 ? 1 : d));
    if (shape.reduce((a, b) => a * b, 1) !== 1) {
      throw InferenceError.invalidArg(`Raw request for BYTES input '${raw.name}' must have shape [1] for model '${model}'`);
    }
    request.inputs.push({ name: raw.name, datatype: 'BYTES', shape, data: [new Uint8Array(body)] });
    return { request, form: { defaultBinary: true, binary: new Map() } };
  }
  const size = ELEMENT_SIZE[raw.datatype];
  shape = raw.shape.map((d, i) => (i === 0 && d === -1 ? 1 : d));
  const variable = shape.filter((d) => d === -1).length;
  if (variable > 1) {
    throw InferenceError.invalidArg(`Raw request for input '${raw.name}' of model '${model}' can have at most one variable dimension`);
  }
  if (variable === 1) {
    const fixed = shape.reduce((a, d) => (d === -1 ? a : a * d), 1) * size;
    shape = shape.map((d) => (d === -1 ? Math.floor(body.length / Math.max(1, fixed)) : d));
  }
  const data = tensorDataFromBytes(raw.datatype, shape, body, raw.name, model);
  request.inputs.push({ name: raw.name, datatype: raw.datatype, shape, data });
  return { request, form: { defaultBinary: true, binary: new Map() } };
}

/**
 * A v2 HTTP infer body (JSON, optionally followed by the binary tensor section) → the internal
 * request. `headerLength` is the Inference-Header-Content-Length header, if any.
 */
export function decodeInferRequest(
  body: Buffer,
  headerLength: string | undefined,
  model: string,
  version: number,
  rawInput?: () => RawInputInfo | undefined,
): DecodedInfer {
  const jsonLength = parseHeaderLength(headerLength, body.length);
  if (jsonLength === 0) return decodeRawBinary(body, model, version, rawInput?.());
  const jsonEnd = jsonLength ?? body.length;
  const parsed = parseJson(jsonLength === undefined ? body : body.subarray(0, jsonEnd));
  checkInferStructure(parsed);
  const json = parsed as {
    id?: string;
    parameters?: Record<string, unknown>;
    inputs: { name: string; shape: number[]; datatype: string; parameters?: Record<string, unknown>; data?: unknown }[];
    outputs?: { name: string; parameters?: Record<string, unknown> }[];
  };
  const request = newInferenceRequest(model, version);
  request.id = json.id ?? '';
  const { binaryDataOutput } = applyRequestParameters(request, parseParams(json.parameters));
  let offset = jsonEnd;
  for (const input of json.inputs) {
    const p = input.parameters ?? {};
    const binarySize = p.binary_data_size;
    const shm = p.shared_memory_region;
    const sources = (input.data !== undefined ? 1 : 0) + (binarySize !== undefined ? 1 : 0) + (shm !== undefined ? 1 : 0);
    if (sources !== 1) {
      throw InferenceError.invalidArg(`${ONE_SOURCE} But ${sources === 0 ? 'none is set' : 'more than one is set'} for input '${input.name}'`);
    }
    if (shm !== undefined) {
      throw InferenceError.invalidArg(
        `Unable to find shared memory region: '${String(shm)}'`,
      );
    }
    const datatype = input.datatype as Tensor['datatype'];
    let data: Tensor['data'];
    if (binarySize !== undefined) {
      if (jsonLength === undefined) {
        throw InferenceError.invalidArg(
          "must specify valid 'Infer-Header-Content-Length' in request header and 'binary_data_size' when passing inputs in binary data format",
        );
      }
      if (typeof binarySize !== 'number' || !Number.isInteger(binarySize) || binarySize < 0) {
        throw InferenceError.invalidArg(`'binary_data_size' of input '${input.name}' must be a non-negative integer`);
      }
      if (offset + binarySize > body.length) {
        throw InferenceError.invalidArg(
          `unexpected size for input '${input.name}', expecting ${binarySize} additional bytes for model '${model}'`,
        );
      }
      data = tensorDataFromBytes(datatype, input.shape, body.subarray(offset, offset + binarySize), input.name, model);
      offset += binarySize;
    } else {
      data = decodeJsonData(datatype, input.shape, input.data, input.name, model);
    }
    request.inputs.push({ name: input.name, datatype, shape: input.shape, data });
  }
  if (offset !== body.length) {
    throw InferenceError.invalidArg(`unexpected additional input data for model '${model}'`);
  }
  const form: OutputForm = { defaultBinary: binaryDataOutput, binary: new Map() };
  if (json.outputs) {
    request.outputs = json.outputs.map((o): RequestedOutput => {
      const p = o.parameters ?? {};
      if (p.shared_memory_region !== undefined) {
        throw InferenceError.invalidArg(`Unable to find shared memory region: '${String(p.shared_memory_region)}'`);
      }
      const out: RequestedOutput = { name: o.name };
      if (p.classification !== undefined) {
        const c = p.classification;
        if (typeof c !== 'number' || !Number.isInteger(c) || c < 0) {
          throw InferenceError.invalidArg(`'classification' of output '${o.name}' must be an unsigned integer`);
        }
        if (c > 0) out.classification = c;
      }
      if (p.binary_data !== undefined) {
        if (typeof p.binary_data !== 'boolean') {
          throw InferenceError.invalidArg(`'binary_data' of output '${o.name}' must be a boolean`);
        }
        form.binary.set(o.name, p.binary_data);
      }
      return out;
    });
  }
  return { request, form };
}

export interface EncodedResponse {
  /** The JSON header, then each binary output's bytes (views of the output tensors, not copies). */
  parts: Uint8Array[];
  /** Set when the body has a binary section. */
  headerLength?: number;
}

/** The response as the JSON text and the binary outputs' bytes (views of the output tensors). */
export interface EncodedResponseText {
  json: string;
  binary: Uint8Array[];
}

/** The internal response → v2 JSON text (+ the binary section's parts for outputs asked in binary). */
export function encodeInferResponseText(response: InferenceResponse, form: OutputForm): EncodedResponseText {
  const binary: Uint8Array[] = [];
  const outputs = response.outputs.map((t) => {
    const asBinary = form.binary.get(t.name) ?? form.defaultBinary;
    const out: Record<string, unknown> = { name: t.name, datatype: t.datatype, shape: t.shape };
    if (asBinary) {
      const bytes = tensorDataToBytes(t);
      out.parameters = { binary_data_size: bytes.byteLength };
      if (bytes.byteLength > 0) binary.push(bytes);
    } else {
      out.data = encodeJsonData(t);
    }
    return out;
  });
  const json: Record<string, unknown> = {};
  if (response.id) json.id = response.id;
  json.model_name = response.modelName;
  json.model_version = response.modelVersion;
  if (response.parameters && Object.keys(response.parameters).length > 0) {
    const params: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(response.parameters)) params[k] = typeof v === 'bigint' ? Number(v) : v;
    json.parameters = params;
  }
  json.outputs = outputs;
  return { json: JSON.stringify(json), binary };
}

/** The internal response → v2 JSON (+ binary section for outputs asked in binary). */
export function encodeInferResponse(response: InferenceResponse, form: OutputForm): EncodedResponse {
  const { json, binary } = encodeInferResponseText(response, form);
  const header = Buffer.from(json);
  if (binary.length === 0) return { parts: [header] };
  return { parts: [header, ...binary], headerLength: header.length };
}

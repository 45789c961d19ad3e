import {
  applyRequestParameters,
  CoreRequestErrors,
  HttpRequestErrors as Errors,
  InferenceError,
  JsonAccess,
  newInferenceRequest,
  setOwn,
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

/** An input of the model, as metadata reports it: a raw-binary request (header length 0) needs the model's single one. */
export interface RawInputInfo {
  name: string;
  datatype: string;
  /** Shape as metadata reports it (batch dim as -1 when batching). */
  shape: number[];
}

function paramValue(key: string, v: unknown): ParameterValue {
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  throw Errors.parameterType(key);
}

function parseParams(raw: Record<string, unknown> | undefined): Record<string, ParameterValue> | undefined {
  if (!raw) return undefined;
  const out: Record<string, ParameterValue> = {};
  for (const k of Object.keys(raw)) {
    const v = raw[k];
    if (v === null || v === undefined) continue;
    setOwn(out, k, paramValue(k, v));
  }
  return out;
}

/** `Inference-Header-Content-Length`: an int32 within the body (Triton's three checks and words). */
function parseHeaderLength(value: string | undefined, bodyLength: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\s*[-+]?[0-9]+\s*$/.test(value)) throw Errors.headerLengthNotInteger(value);
  const n = Number(value);
  if (n < -2147483648 || n > 2147483647) throw Errors.headerLengthOutOfRange(value);
  if (n < 0 || n > bodyLength) throw Errors.headerLengthBeyondBody(value, bodyLength);
  return n;
}

function parseJson(text: Buffer): unknown {
  try {
    return JSON.parse(text.toString('utf8'));
  } catch (e) {
    throw Errors.jsonParse((e as Error).message);
  }
}

/** Raw binary request: the whole body is the data of the model's only input. */
function decodeRawBinary(body: Buffer, model: string, version: number, inputs: readonly RawInputInfo[]): DecodedInfer {
  if (inputs.length !== 1) throw CoreRequestErrors.rawInputCount('', inputs.length, model);
  const raw = inputs[0];
  if (!isDataType(raw.datatype)) throw InferenceError.invalidArg(`unsupported datatype '${raw.datatype}'`);
  const request = newInferenceRequest(model, version);
  let shape: number[];
  if (raw.datatype === 'BYTES') {
    shape = raw.shape.map((d, i) => (i === 0 && d === -1 ? 1 : d));
    if (shape.reduce((a, b) => a * b, 1) !== 1) {
      throw CoreRequestErrors.rawBytesShape('', raw.name);
    }
    request.inputs.push({ name: raw.name, datatype: 'BYTES', shape, data: [new Uint8Array(body)] });
    return { request, form: { defaultBinary: true, binary: new Map() } };
  }
  const size = ELEMENT_SIZE[raw.datatype];
  shape = raw.shape.map((d, i) => (i === 0 && d === -1 ? 1 : d));
  const variable = shape.filter((d) => d === -1).length;
  if (variable > 1) {
    throw CoreRequestErrors.rawShapeNotDeducible('', raw.name);
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
 * request. `headerLength` is the Inference-Header-Content-Length header, if any; `rawInputs` gives
 * the model's inputs, asked for only by a raw-binary request.
 */
export function decodeInferRequest(
  body: Buffer,
  headerLength: string | undefined,
  model: string,
  version: number,
  rawInputs: () => readonly RawInputInfo[] = () => [],
): DecodedInfer {
  const jsonLength = parseHeaderLength(headerLength, body.length);
  if (jsonLength === 0) return decodeRawBinary(body, model, version, rawInputs());
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
      throw Errors.inputSources({ data: input.data !== undefined, binary: binarySize !== undefined, sharedMemory: shm !== undefined });
    }
    if (shm !== undefined) throw Errors.shmRegionNotFound(String(shm));
    const datatype = input.datatype as Tensor['datatype'];
    let data: Tensor['data'];
    if (binarySize !== undefined) {
      if (typeof binarySize !== 'number' || !Number.isInteger(binarySize) || binarySize < 0) {
        throw Errors.unableToParse('binary_data_size', JsonAccess.unsigned);
      }
      if (jsonLength === undefined) throw Errors.binaryWithoutHeaderLength();
      if (offset + binarySize > body.length) {
        throw Errors.unexpectedInputSize(input.name, offset + binarySize - body.length, model);
      }
      data = tensorDataFromBytes(datatype, input.shape, body.subarray(offset, offset + binarySize), input.name, model);
      offset += binarySize;
    } else {
      data = decodeJsonData(datatype, input.shape, input.data, input.name, model);
    }
    request.inputs.push({ name: input.name, datatype, shape: input.shape, data });
  }
  if (offset !== body.length) throw Errors.unexpectedAdditionalData(model);
  const form: OutputForm = { defaultBinary: binaryDataOutput, binary: new Map() };
  if (json.outputs) {
    request.outputs = json.outputs.map((o): RequestedOutput => {
      const p = o.parameters ?? {};
      if (p.shared_memory_region !== undefined) throw Errors.shmRegionNotFound(String(p.shared_memory_region));
      const out: RequestedOutput = { name: o.name };
      if (p.classification !== undefined) {
        const c = p.classification;
        if (typeof c !== 'number' || !Number.isInteger(c) || c < 0) throw Errors.unableToParse('classification', JsonAccess.unsigned);
        if (c > 0) out.classification = c;
      }
      if (p.binary_data !== undefined) {
        if (typeof p.binary_data !== 'boolean') throw Errors.unableToParse('binary_data', JsonAccess.boolean);
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

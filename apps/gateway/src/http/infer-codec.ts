import type { SharedMemoryUse, SystemSharedMemory } from '@nereid/core';
import {
  applyRequestParameters,
  CoreRequestErrors,
  HttpRequestErrors as Errors,
  InferenceError,
  SharedMemoryErrors,
  JsonAccess,
  newInferenceRequest,
  setOwn,
  type InferenceRequest,
  type InferenceResponse,
  type ParameterValue,
  type RequestedOutput,
} from '@nereid/protocol';
import { isUtf8 } from 'node:buffer';
import {
  BYTES_LENGTH_PREFIX,
  decodeJsonData,
  ELEMENT_SIZE,
  encodeJsonData,
  isDataType,
  holdsUnsafeInteger,
  JsonNumber,
  mayHoldFractionOrExponent,
  parseJsonText,
  tensorDataFromBytes,
  tensorDataToBytes,
  type DataType,
  type Tensor,
} from '@nereid/tensor';
import type { DecodedAllowance } from './decoded-allowance';
import { checkInferStructure } from './infer-dto';
import type { CachedHeader, HeaderCache } from './header-cache';

/** How the response should carry each output. */
export interface OutputForm {
  defaultBinary: boolean;
  /** Per requested output: true = binary section, false = JSON; made only when a request names one (none: every output takes `defaultBinary`). */
  binary?: Map<string, boolean>;
  /**
   * The request's client shared memory: inputs read from regions, outputs bound to regions. The
   * caller releases it (`releaseSharedMemory`) once the response is sent or the request failed.
   */
  sharedMemory?: SharedMemoryUse;
}

/** Releases the client shared memory a request used (idempotent). */
export function releaseSharedMemory(form: OutputForm | undefined): void {
  form?.sharedMemory?.release();
}

/** An input's or output's `shared_memory_*` parameters (Triton's CheckSharedMemoryData). */
interface ShmParameters {
  region: string;
  offset: number;
  byteSize: number;
}

function shmParameters(p: Record<string, unknown>): ShmParameters | undefined {
  const region = p.shared_memory_region;
  if (region === undefined) return undefined;
  if (typeof region !== 'string') throw Errors.unableToParse('shared_memory_region', JsonAccess.string);
  const unsigned = (key: string): number => {
    const v = p[key];
    if (v === undefined) return 0;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw Errors.unableToParse(key, JsonAccess.unsigned);
    return v;
  };
  return { region, offset: unsigned('shared_memory_offset'), byteSize: unsigned('shared_memory_byte_size') };
}

/** The request's use of client shared memory, begun on first need; NOT_FOUND when none is served. */
function useOf(form: OutputForm, params: ShmParameters, shm: SystemSharedMemory | undefined): SharedMemoryUse {
  if (!shm) throw SharedMemoryErrors.notFound(params.region);
  return (form.sharedMemory ??= shm.use());
}

export interface DecodedInfer {
  request: InferenceRequest;
  form: OutputForm;
  /** The request's header as cached (see header-cache.ts), when a cache was given and could keep it. */
  cached?: CachedHeader;
}

/** An input of the model, as metadata reports it: a raw-binary request (header length 0) needs the model's single one. */
export interface RawInputInfo {
  name: string;
  datatype: string;
  /** Shape as metadata reports it (batch dim as -1 when batching). */
  shape: number[];
}

function paramValue(key: string, v: unknown): ParameterValue {
  // An integer beyond 2^53 (a uint64 sequence_id) stays exact, as over gRPC.
  if (v instanceof JsonNumber) return paramValue(key, v.isIntegerLiteral() && !Number.isSafeInteger(v.value) ? BigInt(v.text) : v.value);
  if (typeof v === 'bigint') return v;
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

/** Datatypes whose JSON elements must be integers, read exactly. */
const INTEGER_TYPES: ReadonlySet<DataType> = new Set<DataType>([
  'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64',
]);

/**
 * The JSON part of a request → its value and text. JSON is UTF-8 text: other bytes would be
 * decoded to U+FFFD and reach the model altered, so they are refused. `NaN`, `Inf` and `Infinity`
 * are numbers, as Triton's parser reads them (JSON.parse does not know them: the slower parser
 * takes over only when JSON.parse fails).
 */
function parseJson(bytes: Buffer): { value: unknown; text: string } {
  if (!isUtf8(bytes)) {
    throw InferenceError.invalidArg(
      'failed to parse the request JSON buffer: it is not valid UTF-8 text (send BYTES that are not UTF-8 text in the binary data format)',
    );
  }
  const text = bytes.toString('utf8');
  try {
    return { value: JSON.parse(text), text };
  } catch (e) {
    try {
      return { value: parseJsonText(text, { keepLiterals: false }), text };
    } catch {
      throw Errors.jsonParse((e as Error).message);
    }
  }
}

/**
 * Numbers as the client wrote them, where JSON.parse may have changed them: it reads `1e-400` and
 * `5.0` as the integers 0 and 5, and 9007199254740993 as ...992. The text is parsed again, keeping
 * such literals (JsonNumber), only when it holds a fraction or an exponent somewhere (strings
 * included), or when a 64-bit integer tensor or the parameters hold a number of 2^53 or more.
 */
class ExactData {
  private fractionOrExponent: boolean | undefined;
  private exact: ExactRequest | undefined;

  constructor(private readonly text: string) {}

  /** The `data` of input `index`, for integer datatypes with every number as written. */
  dataOf(index: number, datatype: DataType, parsed: unknown): unknown {
    if (!INTEGER_TYPES.has(datatype)) return parsed;
    const wide = datatype === 'INT64' || datatype === 'UINT64';
    if (!this.mayHoldFractionOrExponent() && !(wide && holdsUnsafeInteger(parsed))) return parsed;
    return this.exactRequest().inputs[index].data;
  }

  /** The request `parameters`, numbers as written (a uint64 sequence_id beyond 2^53 stays exact). */
  parametersOf(parsed: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
    if (!parsed) return parsed;
    if (!this.mayHoldFractionOrExponent() && !holdsUnsafeInteger(Object.values(parsed))) return parsed;
    return this.exactRequest().parameters;
  }

  private mayHoldFractionOrExponent(): boolean {
    this.fractionOrExponent ??= mayHoldFractionOrExponent(this.text);
    return this.fractionOrExponent;
  }

  private exactRequest(): ExactRequest {
    this.exact ??= parseJsonText(this.text, { keepLiterals: true }) as ExactRequest;
    return this.exact;
  }
}

interface ExactRequest {
  parameters?: Record<string, unknown>;
  inputs: { data?: unknown }[];
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
    return { request, form: { defaultBinary: true } };
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
  return { request, form: { defaultBinary: true } };
}

/**
 * A v2 HTTP infer body (JSON, optionally followed by the binary tensor section) → the internal
 * request. `headerLength` is the Inference-Header-Content-Length header, if any; `rawInputs` gives
 * the model's inputs, asked for only by a raw-binary request. With a `cache`, a JSON header of a
 * binary request decoded before (byte-equal, same body length) is not parsed again.
 */
export function decodeInferRequest(
  body: Buffer,
  headerLength: string | undefined,
  model: string,
  version: number,
  rawInputs: () => readonly RawInputInfo[] = () => [],
  sharedMemory?: SystemSharedMemory,
  cache?: HeaderCache,
  allowance?: DecodedAllowance,
): DecodedInfer {
  const jsonLength = parseHeaderLength(headerLength, body.length);
  if (jsonLength === 0) return decodeRawBinary(body, model, version, rawInputs());
  if (cache !== undefined && jsonLength !== undefined) {
    const cached = cache.find(body, jsonLength);
    if (cached !== undefined) {
      const request = cached.request(body, model, version);
      // The same shapes over a body of the same length passed the bound when the header was first
      // decoded; its elements are charged for this request.
      allowance?.takeDecoded(request.inputs);
      return { request, form: cached.form, cached };
    }
  }
  const jsonEnd = jsonLength ?? body.length;
  const { value: parsed, text } = parseJson(jsonLength === undefined ? body : body.subarray(0, jsonEnd));
  checkInferStructure(parsed);
  const exact = new ExactData(text);
  const json = parsed as {
    id?: string;
    parameters?: Record<string, unknown>;
    inputs: { name: string; shape: number[]; datatype: string; parameters?: Record<string, unknown>; data?: unknown }[];
    outputs?: { name: string; parameters?: Record<string, unknown> }[];
  };
  const request = newInferenceRequest(model, version);
  request.id = json.id ?? '';
  const params = parseParams(exact.parametersOf(json.parameters));
  const { binaryDataOutput } = applyRequestParameters(request, params);
  const form: OutputForm = { defaultBinary: binaryDataOutput };
  try {
    decodeInputs(json.inputs, body, jsonLength, request, form, exact, sharedMemory, allowance);
    if (json.outputs) request.outputs = json.outputs.map((o) => decodeOutput(o, form, sharedMemory));
  } catch (e) {
    releaseSharedMemory(form);
    throw e;
  }
  if (cache === undefined || jsonLength === undefined || form.sharedMemory !== undefined || !allBinary(json.inputs)) return { request, form };
  const cached = cache.remember(body, jsonLength, {
    id: request.id,
    params,
    inputs: request.inputs.map((t, i) => ({ name: t.name, datatype: t.datatype, shape: t.shape.slice(), byteSize: json.inputs[i].parameters!.binary_data_size as number })),
    outputs: request.outputs?.map((o) => ({ ...o })),
    form,
  });
  return { request, form, cached };
}

/**
 * Every input's data lies in the binary section (none in the JSON, none in shared memory): decodeInputs
 * refused an input with more than one source, so binary_data_size alone says it.
 */
function allBinary(inputs: { parameters?: Record<string, unknown> }[]): boolean {
  for (const input of inputs) if (input.parameters?.binary_data_size === undefined) return false;
  return true;
}

/** The inputs, in Triton's order of checks; shared-memory ones read into `form.sharedMemory`'s buffers. */
function decodeInputs(
  inputs: { name: string; shape: number[]; datatype: string; parameters?: Record<string, unknown>; data?: unknown }[],
  body: Buffer,
  jsonLength: number | undefined,
  request: InferenceRequest,
  form: OutputForm,
  exact: ExactData,
  sharedMemory: SystemSharedMemory | undefined,
  allowance: DecodedAllowance | undefined,
): void {
  const model = request.modelName;
  let offset = jsonLength ?? body.length;
  for (let index = 0; index < inputs.length; index++) {
    const input = inputs[index];
    const p = input.parameters ?? {};
    const binarySize = p.binary_data_size;
    const shm = p.shared_memory_region;
    const sources = (input.data !== undefined ? 1 : 0) + (binarySize !== undefined ? 1 : 0) + (shm !== undefined ? 1 : 0);
    if (sources !== 1) {
      throw Errors.inputSources({ data: input.data !== undefined, binary: binarySize !== undefined, sharedMemory: shm !== undefined });
    }
    const datatype = input.datatype as Tensor['datatype'];
    let data: Tensor['data'];
    if (shm !== undefined) {
      // Read straight into a pooled buffer the tensor is a view of (held until the response is sent).
      const params = shmParameters(p)!;
      const bytes = useOf(form, params, sharedMemory).readInput(params.region, params.offset, params.byteSize, input.name);
      if (datatype === 'BYTES') allowance?.takeShape(input.shape, BYTES_LENGTH_PREFIX, input.name, model);
      data = tensorDataFromBytes(datatype, input.shape, bytes, input.name, model);
    } else if (binarySize !== undefined) {
      if (typeof binarySize !== 'number' || !Number.isInteger(binarySize) || binarySize < 0) {
        throw Errors.unableToParse('binary_data_size', JsonAccess.unsigned);
      }
      if (jsonLength === undefined) throw Errors.binaryWithoutHeaderLength();
      if (offset + binarySize > body.length) {
        throw Errors.unexpectedInputSize(input.name, offset + binarySize - body.length, model);
      }
      // BYTES elements are bounded by their count before any is made (decoded-allowance.ts).
      if (datatype === 'BYTES') allowance?.takeShape(input.shape, BYTES_LENGTH_PREFIX, input.name, model);
      data = tensorDataFromBytes(datatype, input.shape, body.subarray(offset, offset + binarySize), input.name, model);
      offset += binarySize;
    } else {
      if (datatype === 'BYTES') allowance?.takeShape(input.shape, ELEMENT_SIZE.BYTES, input.name, model);
      data = decodeJsonData(datatype, input.shape, exact.dataOf(index, datatype, input.data), input.name, model);
    }
    request.inputs.push({ name: input.name, datatype, shape: input.shape, data });
  }
  if (offset !== body.length) throw Errors.unexpectedAdditionalData(model);
}

/** One requested output; one written into shared memory is bound in `form.sharedMemory`. */
function decodeOutput(
  o: { name: string; parameters?: Record<string, unknown> },
  form: OutputForm,
  sharedMemory: SystemSharedMemory | undefined,
): RequestedOutput {
  const p = o.parameters ?? {};
  if (p.shared_memory_region !== undefined) {
    // Triton's ValidateOutputParameter, then CheckSharedMemoryData.
    if (p.classification !== undefined) throw SharedMemoryErrors.httpOutputWith('classification');
    if (p.binary_data !== undefined && typeof p.binary_data !== 'boolean') throw Errors.unableToParse('binary_data', JsonAccess.boolean);
    if (p.binary_data === true) throw SharedMemoryErrors.httpOutputWith('binary_data');
    const params = shmParameters(p)!;
    useOf(form, params, sharedMemory).bindOutput(o.name, params.region, params.offset, params.byteSize);
    return { name: o.name };
  }
  const out: RequestedOutput = { name: o.name };
  if (p.classification !== undefined) {
    const c = p.classification;
    if (typeof c !== 'number' || !Number.isInteger(c) || c < 0) throw Errors.unableToParse('classification', JsonAccess.unsigned);
    if (c > 0) out.classification = c;
  }
  if (p.binary_data !== undefined) {
    if (typeof p.binary_data !== 'boolean') throw Errors.unableToParse('binary_data', JsonAccess.boolean);
    (form.binary ??= new Map()).set(o.name, p.binary_data);
  }
  return out;
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

/**
 * The internal response → v2 JSON text (+ the binary section's parts for outputs asked in binary).
 * Throws INVALID_ARG for an output JSON cannot carry (FP16, BF16, BYTES that are not UTF-8): the
 * caller answers with the error.
 */
export function encodeInferResponseText(response: InferenceResponse, form: OutputForm): EncodedResponseText {
  // Inputs read in place from client shared memory: an object truncated during the run answers an error.
  form.sharedMemory?.verifyInputs();
  const binary: Uint8Array[] = [];
  let exactText = false;
  const outputs = response.outputs.map((t) => {
    const asBinary = form.binary?.get(t.name) ?? form.defaultBinary;
    const out: { name: string; datatype: string; shape: number[]; parameters?: { binary_data_size: number }; data?: unknown[] | string } =
      { name: t.name, datatype: t.datatype, shape: t.shape };
    const slice = form.sharedMemory?.output(t.name);
    if (slice) {
      // Written into the client's region as it is; the response carries neither data nor size.
      slice.write(tensorDataToBytes(t), t.name);
    } else if (asBinary) {
      const bytes = tensorDataToBytes(t);
      out.parameters = { binary_data_size: bytes.byteLength };
      if (bytes.byteLength > 0) binary.push(bytes);
    } else {
      out.data = encodeJsonData(t);
      if (typeof out.data === 'string') exactText = true;
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
  if (!exactText) return { json: JSON.stringify(json), binary };
  // Some data is JSON text already (NaN, -0.0, 64-bit integers beyond 2^53: see encodeJsonData):
  // the outputs are written piece by piece around it.
  json.outputs = [];
  const head = JSON.stringify(json).slice(0, -'[]}'.length);
  const entries = outputs.map(({ data, ...rest }) => {
    const text = JSON.stringify(rest).slice(0, -1);
    return data === undefined ? `${text}}` : `${text},"data":${typeof data === 'string' ? data : JSON.stringify(data)}}`;
  });
  return { json: `${head}[${entries.join(',')}]}`, binary };
}

/** The internal response → v2 JSON (+ binary section for outputs asked in binary). */
export function encodeInferResponse(response: InferenceResponse, form: OutputForm): EncodedResponse {
  const { json, binary } = encodeInferResponseText(response, form);
  const header = Buffer.from(json);
  if (binary.length === 0) return { parts: [header] };
  return { parts: [header, ...binary], headerLength: header.length };
}

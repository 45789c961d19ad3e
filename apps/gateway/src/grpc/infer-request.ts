import type { SharedMemoryUse, SystemSharedMemory } from '@nereid/core';
import {
  applyRequestParameters,
  CoreRequestErrors,
  GrpcRequestErrors as Errors,
  newInferenceRequest,
  SharedMemoryErrors,
  setOwn,
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
import { refusalOf } from './scanned-deserializers';
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
  /**
   * The request's client shared memory (inputs read from regions, outputs bound to regions): the
   * caller passes it to encodeInferResponse and releases it (`releaseSharedMemory`) once answered.
   */
  sharedMemory?: SharedMemoryUse;
}

const SHM_REGION = 'shared_memory_region';
const SHM_OFFSET = 'shared_memory_offset';
const SHM_BYTE_SIZE = 'shared_memory_byte_size';

/** A tensor's `shared_memory_*` parameters, checked as Triton's ParseSharedMemoryParams does. */
function shmParameters(name: string, params: WireParameters | undefined): { region: string; offset: WireLong; byteSize: WireLong } | undefined {
  if (!params) return undefined;
  const region = params[SHM_REGION];
  if (region !== undefined && region.parameter_choice !== 'string_param') {
    throw SharedMemoryErrors.grpcParameterType(SHM_REGION, name, 'string_param');
  }
  const long = (key: string): WireLong => {
    const p = params[key];
    if (p === undefined) return 0;
    if (region === undefined) throw SharedMemoryErrors.grpcWithoutRegion(key, name);
    if (p.parameter_choice !== 'int64_param') throw SharedMemoryErrors.grpcParameterType(key, name, 'int64_param');
    return p.int64_param ?? 0;
  };
  const offset = long(SHM_OFFSET);
  const byteSize = long(SHM_BYTE_SIZE);
  if (region === undefined) return undefined;
  return { region: region.string_param ?? '', offset, byteSize };
}

/** The request's use of client shared memory, begun on first need; NOT_FOUND when none is served. */
function useOf(decoded: DecodedInferRequest, region: string, sharedMemory: SystemSharedMemory | undefined): SharedMemoryUse {
  if (!sharedMemory) throw SharedMemoryErrors.notFound(region);
  return (decoded.sharedMemory ??= sharedMemory.use());
}

/** Shape of an input; a negative dimension (-1: "any") cannot describe data that was sent. */
function decodeShape(shape: readonly WireLong[], name: string, msg: WireModelInferRequest): number[] {
  const out = new Array<number>(shape.length);
  for (let i = 0; i < shape.length; i++) {
    const d = Number(shape[i]);
    if (!Number.isSafeInteger(d) || d < 0) throw CoreRequestErrors.unspecifiedDims(msg.id, name, msg.model_name, shape);
    out[i] = d;
  }
  return out;
}

function decodeDatatype(datatype: string, name: string): DataType {
  if (isDataType(datatype)) return datatype;
  throw Errors.invalidDatatype(name);
}

/** Whether the input carries a `contents` message (set, even if empty: protobuf's has_contents). */
function hasContents(c: WireTensorContents | null | undefined): c is WireTensorContents {
  return c !== null && c !== undefined;
}

/**
 * A plain Uint8Array over the same memory. Buffer's `slice()` is a view, not a copy, so code that
 * copies a misaligned tensor with `.slice()` must get a true Uint8Array.
 */
function plainBytes(b: Buffer): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

/**
 * The inputs with their data, in Triton's way and order: with any raw_input_contents, no input may
 * carry typed contents; an input without contents takes the next raw entry.
 */
function decodeInputs(msg: WireModelInferRequest, decoded: DecodedInferRequest, sharedMemory: SystemSharedMemory | undefined): Tensor[] {
  const raw = msg.raw_input_contents;
  const model = msg.model_name;
  let next = 0;
  const tensors = msg.inputs.map((input): Tensor => {
    const { name } = input;
    const datatype = decodeDatatype(input.datatype, name);
    const shape = decodeShape(input.shape, name, msg);
    let data: TensorData;
    const shm = shmParameters(name, input.parameters);
    if (shm) {
      if (hasContents(input.contents)) throw SharedMemoryErrors.grpcContentsWithShm(name, model);
      // Read straight into a pooled buffer the tensor is a view of (held until the call is answered).
      const bytes = useOf(decoded, shm.region, sharedMemory).readInput(shm.region, shm.offset, shm.byteSize, name);
      data = tensorDataFromBytes(datatype, shape, bytes, name, model);
    } else if (hasContents(input.contents)) {
      if (raw.length > 0) throw Errors.contentsWithRaw(name, model);
      data = tensorDataFromContents(datatype, shape, input.contents, name, model);
    } else if (next < raw.length) {
      data = tensorDataFromBytes(datatype, shape, plainBytes(raw[next++]), name, model);
    } else {
      throw Errors.missingInputData(name, model);
    }
    return { name, datatype, shape, data };
  });
  if (next < raw.length) throw Errors.extraRawContents(next, raw.length, model);
  return tensors;
}

function classificationOf(params: WireParameters): number | undefined {
  const p = params.classification;
  if (p === undefined) return undefined;
  if (p.parameter_choice !== 'int64_param') throw Errors.classificationType();
  const n = Number(longValue(p.int64_param));
  if (n <= 0) throw Errors.classificationValue();
  return n;
}

/** Output parameters other than classification and `binary_data` (kept for the core to judge). */
function outputParameters(params: WireParameters): Parameters | undefined {
  let out: Parameters | undefined;
  for (const key of Object.keys(params)) {
    if (key === 'classification' || key === 'binary_data' || key === SHM_REGION || key === SHM_OFFSET || key === SHM_BYTE_SIZE) continue;
    const v = customValue(key, params[key]);
    if (v === undefined) continue;
    setOwn((out ??= {}), key, v);
  }
  return out;
}

function decodeOutput(o: WireRequestedOutput, decoded: DecodedInferRequest, sharedMemory: SystemSharedMemory | undefined): RequestedOutput {
  const out: RequestedOutput = { name: o.name };
  const shm = shmParameters(o.name, o.parameters);
  const classification = classificationOf(o.parameters);
  if (shm) {
    if (classification !== undefined) throw SharedMemoryErrors.grpcOutputWithClassification();
    useOf(decoded, shm.region, sharedMemory).bindOutput(o.name, shm.region, shm.offset, shm.byteSize);
  }
  if (classification !== undefined) out.classification = classification;
  const parameters = outputParameters(o.parameters);
  if (parameters) out.parameters = parameters;
  return out;
}

/**
 * ModelInferRequest → the core's InferenceRequest. Decodes only the wire format (version string,
 * parameters, tensor bytes); model-level validation is the core's.
 */
export function decodeInferRequest(msg: WireModelInferRequest, sharedMemory?: SystemSharedMemory): DecodedInferRequest {
  // A message too large decoded was never decoded (scanned-deserializers.ts): refused here.
  const refused = refusalOf(msg);
  if (refused) throw refused;
  const params = decodeRequestParameters(msg.parameters);
  const request = newInferenceRequest(msg.model_name, parseModelVersion(msg.model_version));
  request.id = msg.id;
  applyRequestParameters(request, params.values);
  const decoded: DecodedInferRequest = { request, enableEmptyFinalResponse: params.enableEmptyFinalResponse };
  try {
    request.inputs = decodeInputs(msg, decoded, sharedMemory);
    if (msg.outputs.length > 0) request.outputs = msg.outputs.map((o) => decodeOutput(o, decoded, sharedMemory));
  } catch (e) {
    releaseSharedMemory(decoded);
    throw e;
  }
  return decoded;
}

/** Releases the client shared memory a decoded request used (idempotent). */
export function releaseSharedMemory(decoded: DecodedInferRequest | undefined): void {
  decoded?.sharedMemory?.release();
}

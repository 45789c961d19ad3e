import { releaseSlices, type SharedMemorySlice, type SystemSharedMemory } from '@nereid/core';
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
   * Requested outputs written into client shared memory, each a held slice of its region: the
   * caller passes them to encodeInferResponse and releases them (`releaseSlices`) once done.
   */
  sharedOutputs?: Map<string, SharedMemorySlice>;
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

/** Holds the slice of a tensor's region; NOT_FOUND when no client shared memory is served. */
function sliceOf(shm: { region: string; offset: WireLong; byteSize: WireLong }, sharedMemory: SystemSharedMemory | undefined): SharedMemorySlice {
  if (!sharedMemory) throw SharedMemoryErrors.notFound(shm.region);
  return sharedMemory.slice(shm.region, shm.offset, shm.byteSize);
}

/** An input read from client shared memory (the slice is held only for the read). */
function shmInput(datatype: DataType, shape: number[], name: string, model: string, slice: SharedMemorySlice): TensorData {
  try {
    return tensorDataFromBytes(datatype, shape, slice.read(), name, model);
  } finally {
    slice.release();
  }
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
function decodeInputs(msg: WireModelInferRequest, sharedMemory: SystemSharedMemory | undefined): Tensor[] {
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
      data = shmInput(datatype, shape, name, model, sliceOf(shm, sharedMemory));
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
    const slice = sliceOf(shm, sharedMemory);
    (decoded.sharedOutputs ??= new Map()).get(o.name)?.release();
    decoded.sharedOutputs.set(o.name, slice);
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
  const params = decodeRequestParameters(msg.parameters);
  const request = newInferenceRequest(msg.model_name, parseModelVersion(msg.model_version));
  request.id = msg.id;
  applyRequestParameters(request, params.values);
  request.inputs = decodeInputs(msg, sharedMemory);
  const decoded: DecodedInferRequest = { request, enableEmptyFinalResponse: params.enableEmptyFinalResponse };
  if (msg.outputs.length > 0) {
    try {
      request.outputs = msg.outputs.map((o) => decodeOutput(o, decoded, sharedMemory));
    } catch (e) {
      releaseSharedOutputs(decoded);
      throw e;
    }
  }
  return decoded;
}

/** Releases the shared-memory slices a decoded request holds (idempotent). */
export function releaseSharedOutputs(decoded: DecodedInferRequest | undefined): void {
  if (decoded?.sharedOutputs) releaseSlices(decoded.sharedOutputs.values());
}

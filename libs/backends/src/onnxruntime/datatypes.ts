import type { DataType } from '@nereid/tensor';

/**
 * onnxruntime-node tensor type names, and `bfloat16`: onnxruntime-node has no such type, BF16
 * tensors (raw 16-bit patterns) travel as float32 through Bf16SessionRunner (bf16-runner.ts).
 */
export type OrtType =
  | 'bool' | 'uint8' | 'uint16' | 'uint32' | 'uint64' | 'int8' | 'int16' | 'int32' | 'int64'
  | 'float16' | 'float32' | 'float64' | 'string' | 'bfloat16';

/** ONNX TensorProto.DataType number → KServe datatype. */
const FROM_ONNX: ReadonlyMap<number, DataType> = new Map<number, DataType>([
  [1, 'FP32'], [2, 'UINT8'], [3, 'INT8'], [4, 'UINT16'], [5, 'INT16'], [6, 'INT32'], [7, 'INT64'],
  [8, 'BYTES'], [9, 'BOOL'], [10, 'FP16'], [11, 'FP64'], [12, 'UINT32'], [13, 'UINT64'], [16, 'BF16'],
]);

const TO_ORT: Readonly<Record<DataType, OrtType | undefined>> = {
  BOOL: 'bool', UINT8: 'uint8', UINT16: 'uint16', UINT32: 'uint32', UINT64: 'uint64',
  INT8: 'int8', INT16: 'int16', INT32: 'int32', INT64: 'int64',
  FP16: 'float16', FP32: 'float32', FP64: 'float64', BYTES: 'string', BF16: 'bfloat16',
};

const FROM_ORT: ReadonlyMap<string, DataType> = new Map(
  (Object.entries(TO_ORT) as [DataType, OrtType | undefined][])
    .filter((e): e is [DataType, OrtType] => e[1] !== undefined)
    .map(([d, o]) => [o, d] as const),
);

export function dataTypeFromOnnx(elemType: number): DataType | undefined {
  return FROM_ONNX.get(elemType);
}

/** The ORT type a datatype travels as (undefined for none: every datatype has one today). */
export function ortTypeOf(d: DataType): OrtType | undefined {
  return TO_ORT[d];
}

export function dataTypeFromOrt(t: string): DataType | undefined {
  return FROM_ORT.get(t);
}

type NumericArrayCtor =
  | Uint8ArrayConstructor | Int8ArrayConstructor | Uint16ArrayConstructor | Int16ArrayConstructor
  | Uint32ArrayConstructor | Int32ArrayConstructor | BigUint64ArrayConstructor | BigInt64ArrayConstructor
  | Float32ArrayConstructor | Float64ArrayConstructor;

/** Typed array class onnxruntime-node expects for each numeric type (BOOL: one byte per element). */
export const ORT_ARRAY: Readonly<Record<Exclude<OrtType, 'string'>, NumericArrayCtor>> = {
  bool: Uint8Array, uint8: Uint8Array, int8: Int8Array, uint16: Uint16Array, int16: Int16Array,
  float16: Uint16Array, uint32: Uint32Array, int32: Int32Array, uint64: BigUint64Array,
  int64: BigInt64Array, float32: Float32Array, float64: Float64Array, bfloat16: Uint16Array,
};

import type { DataType } from './datatype';
import type { TensorData } from './tensor';

/** Every datatype whose elements have a fixed width (all but BYTES). */
export type NumericDataType = Exclude<DataType, 'BYTES'>;

/** TensorData of a fixed-width datatype. */
export type NumericTensorData = Exclude<TensorData, Uint8Array[]>;

interface TypedArrayConstructor {
  new (length: number): NumericTensorData;
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): NumericTensorData;
  readonly BYTES_PER_ELEMENT: number;
}

/** The typed array that holds each fixed-width datatype (FP16/BF16 as raw bits, BOOL as bytes). */
const TYPED_ARRAY: Readonly<Record<NumericDataType, TypedArrayConstructor>> = {
  BOOL: Uint8Array,
  UINT8: Uint8Array,
  UINT16: Uint16Array,
  UINT32: Uint32Array,
  UINT64: BigUint64Array,
  INT8: Int8Array,
  INT16: Int16Array,
  INT32: Int32Array,
  INT64: BigInt64Array,
  FP16: Uint16Array,
  FP32: Float32Array,
  FP64: Float64Array,
  BF16: Uint16Array,
};

export function isBytesData(data: TensorData): data is Uint8Array[] {
  return Array.isArray(data);
}

/**
 * The one empty BYTES element: it holds nothing, so every decoder and allocation shares it (an
 * empty Uint8Array of its own costs ~100-360 bytes of memory for 2-4 bytes on the wire, issue 16).
 */
export const EMPTY_BYTES_ELEMENT = new Uint8Array(0);

/**
 * A zeroed TensorData of `count` elements (BYTES: `count` empty elements, one shared empty array).
 * Callers bound `count` first (checkedElementCount, a size limit): nothing here refuses a large one.
 */
export function allocateTensorData(datatype: DataType, count: number): TensorData {
  if (datatype === 'BYTES') return new Array<Uint8Array>(count).fill(EMPTY_BYTES_ELEMENT);
  return new TYPED_ARRAY[datatype](count);
}

/**
 * Views `bytes` as the typed array of `datatype` without copying when the byte offset is aligned
 * to the element size; copies into a fresh aligned buffer otherwise. The length must be a multiple
 * of the element size (callers check). Assumes a little-endian host, as the wire format is LE.
 */
export function viewAs(datatype: NumericDataType, bytes: Uint8Array): NumericTensorData {
  const ctor = TYPED_ARRAY[datatype];
  const size = ctor.BYTES_PER_ELEMENT;
  const count = bytes.byteLength / size;
  if (bytes.byteOffset % size === 0) return new ctor(bytes.buffer, bytes.byteOffset, count);
  // Not bytes.slice(): on a Node Buffer slice() is a view of the same memory, not a copy.
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return new ctor(copy.buffer, 0, count);
}

/** The raw little-endian bytes of a fixed-width TensorData, as a view (no copy). */
export function bytesView(data: NumericTensorData): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

import { ELEMENT_SIZE, type DataType } from './datatype';
import { CoreRequestErrors } from './errors';

/**
 * Element storage per datatype. Numeric tensors hold a typed array viewing the raw little-endian
 * bytes; FP16 and BF16 keep their raw 16-bit patterns in a Uint16Array; BOOL is one byte per element
 * (0/1); BYTES is one Uint8Array per element.
 */
export type TensorData =
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Uint32Array
  | Int32Array
  | BigUint64Array
  | BigInt64Array
  | Float32Array
  | Float64Array
  | Uint8Array[];

/** A named, typed, shaped tensor: the one representation used between the front doors and backends. */
export interface Tensor {
  name: string;
  datatype: DataType;
  /** Full shape, batch dimension included when the model batches. */
  shape: number[];
  data: TensorData;
}

export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/**
 * The element count of a request's `shape`, checked before anything is sized from it: each
 * dimension a non-negative integer, and the byte size (count × `elementSize`) exact, i.e. at most
 * 2^53 - 1 (a dimension of 2^63 - 1, or three of 2^31, would otherwise give a rounded count). A
 * shape with a zero dimension holds no element whatever the others are.
 */
export function checkedElementCount(shape: readonly number[], elementSize: number, name: string, model: string): number {
  let count = 1;
  let empty = false;
  for (const d of shape) {
    // A dimension JavaScript cannot count exactly (or no count at all) is too large already.
    if (!Number.isSafeInteger(d) || d < 0) throw CoreRequestErrors.shapeTooLarge(name, model, shape);
    if (d === 0) empty = true;
    else if (count <= Number.MAX_SAFE_INTEGER / d) count *= d;
    else count = Infinity;
  }
  if (empty) return 0;
  if (count * Math.max(1, elementSize) > Number.MAX_SAFE_INTEGER) throw CoreRequestErrors.shapeTooLarge(name, model, shape);
  return count;
}

/** The bytes a serialized BYTES element takes besides its contents: its 4-byte length. */
export const BYTES_LENGTH_PREFIX = 4;

/**
 * The bytes a tensor of `shape` carries as a request serializes it, every element empty or zero:
 * numeric elements their size, a BYTES element its 4-byte length (its contents come on top). The
 * count is checked as checkedElementCount does, so that a size bound can be applied before the
 * tensor is allocated (warmup samples, initial states: shapes a config gives).
 */
export function checkedZeroTensorBytes(shape: readonly number[], datatype: DataType, name: string, model: string): number {
  const size = datatype === 'BYTES' ? BYTES_LENGTH_PREFIX : ELEMENT_SIZE[datatype];
  return checkedElementCount(shape, size, name, model) * size;
}

import type { DataType } from './datatype';

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

import { InferenceError } from './errors';
import type { DataType } from './datatype';
import { fp16BitsToFloat32, bf16BitsToFloat32 } from './float16';
import { elementCount, type Tensor, type TensorData } from './tensor';
import { isBytesData } from './typed';

/** Deepest nesting of `data` arrays accepted (Triton's JSON parser limit). */
export const MAX_JSON_DATA_DEPTH = 100;

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8');

/** Thrown inside the flat fast path when an element turns out to be an array. */
const NESTED = Symbol('nested');

interface Target {
  datatype: DataType;
  name: string;
  model: string;
}

interface IntRange {
  min: number;
  max: number;
}

const INT_RANGE: Partial<Record<DataType, IntRange>> = {
  UINT8: { min: 0, max: 0xff },
  UINT16: { min: 0, max: 0xffff },
  UINT32: { min: 0, max: 0xffffffff },
  INT8: { min: -0x80, max: 0x7f },
  INT16: { min: -0x8000, max: 0x7fff },
  INT32: { min: -0x80000000, max: 0x7fffffff },
};

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/**
 * JSON `data` of an input (flat or nested, row-major) → TensorData of `datatype`. Checks element JSON
 * types and integer ranges, the element count against `shape` and the nesting depth.
 */
export function decodeJsonData(
  datatype: DataType,
  shape: number[],
  data: unknown,
  name: string,
  model: string,
): TensorData {
  const t: Target = { datatype, name, model };
  if (datatype === 'FP16' || datatype === 'BF16') {
    throw InferenceError.invalidArg(
      `receiving ${datatype} data via JSON is not supported. Please use the binary data format for input ${name}`,
    );
  }
  if (!Array.isArray(data)) {
    throw InferenceError.invalidArg(`${parseError(t)}: 'data' must be an array, got ${describe(data)}`);
  }
  const expected = elementCount(shape);
  if (data.length === expected) {
    try {
      return decodeFlat(t, data);
    } catch (e) {
      if (e !== NESTED) throw e;
    }
  } else if (!data.some(Array.isArray)) {
    throw countMismatch(t, shape, expected, data.length);
  }
  const flat: unknown[] = [];
  flatten(t, data, 1, flat);
  if (flat.length !== expected) throw countMismatch(t, shape, expected, flat.length);
  return decodeFlat(t, flat);
}

function flatten(t: Target, data: readonly unknown[], depth: number, out: unknown[]): void {
  if (depth > MAX_JSON_DATA_DEPTH) {
    throw InferenceError.invalidArg(`${parseError(t)}: arrays nested deeper than ${MAX_JSON_DATA_DEPTH} levels`);
  }
  for (const v of data) {
    if (Array.isArray(v)) flatten(t, v, depth + 1, out);
    else out.push(v);
  }
}

function decodeFlat(t: Target, values: readonly unknown[]): TensorData {
  switch (t.datatype) {
    case 'BOOL':
      return decodeBool(t, values);
    case 'INT64':
      return decodeInt64(t, values, INT64_MIN, INT64_MAX, new BigInt64Array(values.length));
    case 'UINT64':
      return decodeInt64(t, values, 0n, UINT64_MAX, new BigUint64Array(values.length));
    case 'FP32':
      return decodeFloat(t, values, new Float32Array(values.length));
    case 'FP64':
      return decodeFloat(t, values, new Float64Array(values.length));
    case 'BYTES':
      return decodeBytes(t, values);
    default:
      return decodeInt(t, values);
  }
}

function decodeBool(t: Target, values: readonly unknown[]): Uint8Array {
  const out = new Uint8Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === true) out[i] = 1;
    else if (v !== false) throw badElement(t, i, v);
  }
  return out;
}

function decodeInt(t: Target, values: readonly unknown[]): TensorData {
  const range = INT_RANGE[t.datatype] as IntRange;
  const out = allocateInt(t.datatype, values.length);
  const { min, max } = range;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v === 'number' && v >= min && v <= max && Math.floor(v) === v) out[i] = v;
    else out[i] = slowInt(t, i, v, min, max);
  }
  return out;
}

function allocateInt(datatype: DataType, n: number): Uint8Array | Uint16Array | Uint32Array | Int8Array | Int16Array | Int32Array {
  switch (datatype) {
    case 'UINT8':
      return new Uint8Array(n);
    case 'UINT16':
      return new Uint16Array(n);
    case 'UINT32':
      return new Uint32Array(n);
    case 'INT8':
      return new Int8Array(n);
    case 'INT16':
      return new Int16Array(n);
    default:
      return new Int32Array(n);
  }
}

/** Off the hot path: a bigint element in range is accepted, anything else is an error. */
function slowInt(t: Target, i: number, v: unknown, min: number, max: number): number {
  if (typeof v === 'bigint' && v >= BigInt(min) && v <= BigInt(max)) return Number(v);
  throw badElement(t, i, v);
}

function decodeInt64<A extends BigInt64Array | BigUint64Array>(
  t: Target,
  values: readonly unknown[],
  min: bigint,
  max: bigint,
  out: A,
): A {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    let b: bigint;
    if (typeof v === 'number' && Number.isInteger(v)) b = BigInt(v);
    else if (typeof v === 'bigint') b = v;
    else throw badElement(t, i, v);
    if (b < min || b > max) throw badElement(t, i, v);
    out[i] = b;
  }
  return out;
}

function decodeFloat<A extends Float32Array | Float64Array>(t: Target, values: readonly unknown[], out: A): A {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v !== 'number') throw badElement(t, i, v);
    out[i] = v;
  }
  return out;
}

function decodeBytes(t: Target, values: readonly unknown[]): Uint8Array[] {
  const out = new Array<Uint8Array>(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v !== 'string') throw badElement(t, i, v);
    out[i] = utf8Encoder.encode(v);
  }
  return out;
}

function parseError(t: Target): string {
  return `Unable to parse 'data' for input '${t.name}' for model '${t.model}'`;
}

function countMismatch(t: Target, shape: readonly number[], expected: number, got: number): InferenceError {
  return InferenceError.invalidArg(
    `${parseError(t)}: unexpected number of elements, expected ${expected} for shape [${shape.join(',')}], got ${got}`,
  );
}

function badElement(t: Target, i: number, v: unknown): unknown {
  if (Array.isArray(v)) return NESTED;
  return InferenceError.invalidArg(
    `${parseError(t)}: element ${i} must be ${expectedKind(t.datatype)} for datatype ${t.datatype}, got ${describe(v)}`,
  );
}

function expectedKind(datatype: DataType): string {
  switch (datatype) {
    case 'BOOL':
      return 'a boolean (true or false)';
    case 'INT64':
      return `an integer in [${INT64_MIN}, ${INT64_MAX}]`;
    case 'UINT64':
      return `an integer in [0, ${UINT64_MAX}]`;
    case 'FP32':
    case 'FP64':
      return 'a number';
    case 'BYTES':
      return 'a string';
    default: {
      const r = INT_RANGE[datatype] as IntRange;
      return `an integer in [${r.min}, ${r.max}]`;
    }
  }
}

function describe(v: unknown): string {
  if (v === undefined) return 'undefined';
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return String(v);
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 40 ? `${s.slice(0, 37)}...` : s;
}

/**
 * TensorData → flat JSON array: BOOL as booleans, integers and floats as numbers (64-bit integers
 * become JS numbers and lose precision beyond 2^53), BYTES as UTF-8-decoded strings. FP16/BF16 are
 * rejected as Triton does: they must be returned in binary form.
 */
export function encodeJsonData(tensor: Tensor): unknown[] {
  const { datatype, data } = tensor;
  if (datatype === 'FP16' || datatype === 'BF16') {
    throw InferenceError.invalidArg(
      `sending ${datatype} data via JSON is not supported. Please use the binary data format for output`,
    );
  }
  if (isBytesData(data)) return data.map((b) => utf8Decoder.decode(b));
  // Built with push: `new Array(n)` filled by index is a holey array, which JSON.stringify walks
  // on a slow path, and Array.from goes through the iterator protocol (both measured slower).
  const n = data.length;
  const out: unknown[] = [];
  if (datatype === 'BOOL') {
    for (let i = 0; i < n; i++) out.push(data[i] !== 0);
  } else if (data instanceof BigInt64Array || data instanceof BigUint64Array) {
    for (let i = 0; i < n; i++) out.push(Number(data[i]));
  } else {
    for (let i = 0; i < n; i++) out.push(data[i]);
  }
  return out;
}

/** FP16/BF16 raw bits → numbers, for callers that want a JSON view of half-precision data anyway. */
export function halfBitsToNumbers(datatype: 'FP16' | 'BF16', bits: Uint16Array): number[] {
  const convert = datatype === 'FP16' ? fp16BitsToFloat32 : bf16BitsToFloat32;
  return Array.from(bits, convert);
}

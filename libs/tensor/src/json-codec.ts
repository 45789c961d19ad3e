import { isUtf8 } from 'node:buffer';
import { HttpRequestErrors, InferenceError } from './errors';
import { ELEMENT_SIZE, type DataType } from './datatype';
import { fp16BitsToFloat32, bf16BitsToFloat32 } from './float16';
import { JsonNumber } from './json-text';
import { checkedElementCount, type Tensor, type TensorData } from './tensor';
import { EMPTY_BYTES_ELEMENT, isBytesData } from './typed';

/** Triton's JSON nesting limit: `data` and the arrays in it may nest one level less than this. */
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
 * types and integer ranges, the element count against `shape` and the nesting depth. Elements may
 * be `JsonNumber` literals (see json-text.ts): an integer datatype takes only integer literals,
 * read exactly (`1e-400` or `5.0` are refused as Triton refuses them, `9007199254740993` is kept).
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
  const expected = checkedElementCount(shape, ELEMENT_SIZE[datatype], name, model);
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

/** `depth`: 1 for `data` itself. Triton counts `data` as depth 0 and refuses values at depth 100. */
function flatten(t: Target, data: readonly unknown[], depth: number, out: unknown[]): void {
  if (depth >= MAX_JSON_DATA_DEPTH && data.length > 0) throw HttpRequestErrors.dataNestingDepth(MAX_JSON_DATA_DEPTH);
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

/** Off the hot path: a bigint or an integer literal in range is accepted, anything else is an error. */
function slowInt(t: Target, i: number, v: unknown, min: number, max: number): number {
  const b = exactInteger(v);
  if (b !== undefined && b >= BigInt(min) && b <= BigInt(max)) return Number(b);
  throw badElement(t, i, v);
}

/** The exact integer a bigint or an integer literal stands for; undefined for anything else. */
function exactInteger(v: unknown): bigint | undefined {
  if (typeof v === 'bigint') return v;
  if (v instanceof JsonNumber && v.isIntegerLiteral()) return BigInt(v.text);
  return undefined;
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
    let b: bigint | undefined;
    if (typeof v === 'number' && Number.isInteger(v)) b = BigInt(v);
    else b = exactInteger(v);
    if (b === undefined) throw badElement(t, i, v);
    if (b < min || b > max) throw badElement(t, i, v);
    out[i] = b;
  }
  return out;
}

function decodeFloat<A extends Float32Array | Float64Array>(t: Target, values: readonly unknown[], out: A): A {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v === 'number') out[i] = v;
    else if (v instanceof JsonNumber) out[i] = v.value;
    else throw badElement(t, i, v);
  }
  return out;
}

/**
 * JSON strings → BYTES elements, views of one buffer holding all their UTF-8 bytes. An element of
 * its own (`encode` per string) took ~360 bytes of memory for an empty string: a 6 MB body of `""`
 * grew the server by 718 MiB (issue 16); views of one buffer cost ~120 bytes, empty ones nothing.
 */
function decodeBytes(t: Target, values: readonly unknown[]): Uint8Array[] {
  let total = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v !== 'string') throw badElement(t, i, v);
    // A lone surrogate (`"\ud800"`) has no UTF-8 form: encoding it would send U+FFFD instead.
    if (!(v as WellFormedString).isWellFormed()) {
      throw InferenceError.invalidArg(
        `${parseError(t)}: element ${i} holds an unpaired UTF-16 surrogate escape, which is not text that UTF-8 can carry; send BYTES that are not UTF-8 text in the binary data format`,
      );
    }
    total += Buffer.byteLength(v, 'utf8');
  }
  const bytes = new Uint8Array(total);
  const out = new Array<Uint8Array>(values.length);
  let at = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as string;
    if (v.length === 0) {
      out[i] = EMPTY_BYTES_ELEMENT;
      continue;
    }
    const { written } = utf8Encoder.encodeInto(v, bytes.subarray(at));
    out[i] = bytes.subarray(at, at + written);
    at += written;
  }
  return out;
}

/** `String.prototype.isWellFormed` (Node 20; the ES2022 lib this project compiles against lacks it). */
type WellFormedString = string & { isWellFormed(): boolean };

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
  const wrongType = wrongJsonType(t.datatype, v);
  if (wrongType) {
    return InferenceError.invalidArg(
      `${parseError(t)}: ${wrongType}: element ${i} must be ${expectedKind(t.datatype)} for datatype ${t.datatype}, got ${describe(v)}`,
    );
  }
  return InferenceError.invalidArg(
    `${parseError(t)}: element ${i} must be ${expectedKind(t.datatype)} for datatype ${t.datatype}, got ${describe(v)}`,
  );
}

/**
 * Triton's words (its JSON reader's) when an element is not of the JSON kind its datatype reads;
 * undefined when the kind is right (an integer out of range is reported by the caller).
 */
function wrongJsonType(datatype: DataType, v: unknown): string | undefined {
  switch (datatype) {
    case 'BOOL':
      return typeof v === 'boolean' ? undefined : 'attempt to access JSON non-boolean as boolean';
    case 'FP32':
    case 'FP64':
      return typeof v === 'number' || v instanceof JsonNumber ? undefined : 'attempt to access JSON non-number as double';
    case 'BYTES':
      return typeof v === 'string' ? undefined : 'attempt to access JSON non-string as string';
    case 'UINT8':
    case 'UINT16':
    case 'UINT32':
    case 'UINT64':
      return isIntegerValue(v) ? undefined : 'attempt to access JSON non-unsigned-integer as unsigned-integer';
    default:
      return isIntegerValue(v) ? undefined : 'attempt to access JSON non-signed-integer as signed-integer';
  }
}

function isIntegerValue(v: unknown): boolean {
  return (typeof v === 'number' && Number.isInteger(v)) || exactInteger(v) !== undefined;
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
  if (v instanceof JsonNumber) return v.text;
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return String(v);
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 40 ? `${s.slice(0, 37)}...` : s;
}

/**
 * TensorData → its flat JSON `data`, exact for every datatype JSON can carry. Mostly an array for
 * JSON.stringify (BOOL as booleans, numbers, BYTES as strings when every element is UTF-8 text);
 * where JSON.stringify would not write the values exactly (it writes NaN and ±Infinity as null and
 * -0 as 0, and 64-bit integers beyond 2^53 are not JS numbers) the JSON text of the array itself:
 * integers as written by their type, `-0.0`, and `NaN`, `Infinity`, `-Infinity` as Triton writes
 * them (rapidjson with kWriteNanAndInfFlag; Python's json reads them). FP16/BF16, and BYTES that
 * are not UTF-8, are refused (INVALID_ARG): JSON cannot carry them, they must be sent as binary.
 */
export function encodeJsonData(tensor: Tensor): unknown[] | string {
  const { datatype, data } = tensor;
  if (datatype === 'FP16' || datatype === 'BF16') {
    throw InferenceError.invalidArg(
      `sending ${datatype} data via JSON is not supported. Please use the binary data format for output`,
    );
  }
  if (isBytesData(data)) return bytesStrings(tensor.name, data);
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) return bigints(data);
  if (data instanceof Float32Array || data instanceof Float64Array) return floats(data);
  return datatype === 'BOOL' ? booleans(data) : numbers(data);
}

// One small function per kind of array: each loop then sees one element kind (V8 optimized a single
// function with all of them several times slower). Arrays are built with push: `new Array(n)`
// filled by index is a holey array, which JSON.stringify walks on a slow path, and Array.from goes
// through the iterator protocol (both measured slower).

function booleans(data: ArrayLike<number>): boolean[] {
  const out: boolean[] = [];
  for (let i = 0; i < data.length; i++) out.push(data[i] !== 0);
  return out;
}

function numbers(data: ArrayLike<number>): number[] {
  const out: number[] = [];
  for (let i = 0; i < data.length; i++) out.push(data[i]);
  return out;
}

function bigints(data: BigInt64Array | BigUint64Array): number[] | string {
  const out: number[] = [];
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    if (v > MAX_SAFE || v < -MAX_SAFE) return `[${data.join(',')}]`;
    out.push(Number(v));
  }
  return out;
}

function floats(data: Float32Array | Float64Array): number[] | string {
  const out: number[] = [];
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    // v - v is NaN for NaN and both infinities, 0 for every finite v.
    if (v - v !== 0 || (v === 0 && 1 / v < 0)) return floatsText(data);
    out.push(v);
  }
  return out;
}

/** encodeJsonData as JSON text. */
export function encodeJsonDataText(tensor: Tensor): string {
  const data = encodeJsonData(tensor);
  return typeof data === 'string' ? data : JSON.stringify(data);
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Shortest round-trip decimals, `-0.0`, and NaN/Infinity/-Infinity as String() spells them (rapidjson's spelling). */
function floatsText(data: Float32Array | Float64Array): string {
  return `[${Array.from(data, (v) => (v === 0 && 1 / v < 0 ? '-0.0' : String(v))).join(',')}]`;
}

function bytesStrings(name: string, elements: readonly Uint8Array[]): string[] {
  const strings: string[] = [];
  for (let i = 0; i < elements.length; i++) {
    const b = elements[i];
    if (!isUtf8(b)) {
      throw InferenceError.invalidArg(
        `sending BYTES data that is not valid UTF-8 via JSON is not supported (element ${i} of output '${name}'). Please use the binary data format for output`,
      );
    }
    strings.push(utf8Decoder.decode(b));
  }
  return strings;
}

/** FP16/BF16 raw bits → numbers, for callers that want a JSON view of half-precision data anyway. */
export function halfBitsToNumbers(datatype: 'FP16' | 'BF16', bits: Uint16Array): number[] {
  const convert = datatype === 'FP16' ? fp16BitsToFloat32 : bf16BitsToFloat32;
  return Array.from(bits, convert);
}

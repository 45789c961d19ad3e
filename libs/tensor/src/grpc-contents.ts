import { CoreRequestErrors, GrpcRequestErrors, InferenceError } from './errors';
import { ELEMENT_SIZE, type DataType } from './datatype';
import { checkedElementCount, type Tensor, type TensorData } from './tensor';
import { EMPTY_BYTES_ELEMENT, isBytesData } from './typed';

/** A 64-bit integer as @grpc/proto-loader may hand it over (`longs: Number | String`, or a Long). */
export type Int64Like = number | string | bigint | { low: number; high: number; unsigned?: boolean };

/**
 * Triton's `InferTensorContents` as @grpc/proto-loader produces and accepts it (snake_case field
 * names, `keepCase: true`). `bytes_contents` entries are Buffers/Uint8Arrays (or base64 strings
 * with `bytes: String`). Unset repeated fields may be absent or empty.
 */
export interface InferTensorContents {
  bool_contents?: boolean[];
  int_contents?: number[];
  int64_contents?: Int64Like[];
  uint_contents?: number[];
  uint64_contents?: Int64Like[];
  fp32_contents?: number[];
  fp64_contents?: number[];
  bytes_contents?: (Uint8Array | string)[];
}

export type ContentsField = keyof InferTensorContents;

const CONTENTS_FIELDS: readonly ContentsField[] = [
  'bool_contents', 'int_contents', 'int64_contents', 'uint_contents',
  'uint64_contents', 'fp32_contents', 'fp64_contents', 'bytes_contents',
];

/** The typed contents field of each datatype; FP16/BF16 have none (raw contents only). */
export const CONTENTS_FIELD: Readonly<Record<DataType, ContentsField | undefined>> = {
  BOOL: 'bool_contents',
  INT8: 'int_contents',
  INT16: 'int_contents',
  INT32: 'int_contents',
  INT64: 'int64_contents',
  UINT8: 'uint_contents',
  UINT16: 'uint_contents',
  UINT32: 'uint_contents',
  UINT64: 'uint64_contents',
  FP32: 'fp32_contents',
  FP64: 'fp64_contents',
  BYTES: 'bytes_contents',
  FP16: undefined,
  BF16: undefined,
};

const SMALL_INT_RANGE: Partial<Record<DataType, [number, number]>> = {
  INT8: [-0x80, 0x7f],
  INT16: [-0x8000, 0x7fff],
  INT32: [-0x80000000, 0x7fffffff],
  UINT8: [0, 0xff],
  UINT16: [0, 0xffff],
  UINT32: [0, 0xffffffff],
};

interface Target {
  datatype: DataType;
  name: string;
  model: string;
  field: ContentsField;
}

/** gRPC typed `contents` of an input → TensorData; the field must match the datatype. */
export function tensorDataFromContents(
  datatype: DataType,
  shape: number[],
  contents: InferTensorContents,
  name: string,
  model: string,
): TensorData {
  checkFields(datatype, name, model, contents);
  const field = CONTENTS_FIELD[datatype];
  if (field === undefined) {
    throw InferenceError.invalidArg(
      `${datatype} data for input '${name}' for model '${model}' must be sent in raw_input_contents, typed contents have no ${datatype} field`,
    );
  }
  const t: Target = { datatype, name, model, field };
  const values: readonly unknown[] = contents[field] ?? [];
  const expected = checkedElementCount(shape, ELEMENT_SIZE[datatype], name, model);
  if (values.length !== expected) throw countError(t, expected, values.length);
  return convertValues(t, values);
}

/** The datatype a typed contents field carries for an input of `datatype` (int_contents: INT8/16/32). */
function fieldType(field: ContentsField, datatype: DataType): string {
  switch (field) {
    case 'int_contents':
      return datatype === 'INT8' || datatype === 'INT16' ? datatype : 'INT32';
    case 'uint_contents':
      return datatype === 'UINT8' || datatype === 'UINT16' ? datatype : 'UINT32';
    default:
      return FIELD_TYPE[field];
  }
}

const FIELD_TYPE: Readonly<Record<ContentsField, string>> = {
  bool_contents: 'BOOL',
  int_contents: 'INT32',
  int64_contents: 'INT64',
  uint_contents: 'UINT32',
  uint64_contents: 'UINT64',
  fp32_contents: 'FP32',
  fp64_contents: 'FP64',
  bytes_contents: 'BYTES',
};

/** Triton's walk over the fields, in its order: one non-empty field, of the input's datatype. */
function checkFields(datatype: DataType, name: string, model: string, contents: InferTensorContents): void {
  let supplied = false;
  for (const f of CONTENTS_FIELDS) {
    const v = contents[f];
    if (v === undefined || v === null || v.length === 0) continue;
    if (supplied) throw GrpcRequestErrors.contentsTwice(name, model);
    const type = fieldType(f, datatype);
    if (type !== datatype) throw GrpcRequestErrors.contentsType(name, model, type, datatype);
    supplied = true;
  }
}

/** Too many or too few elements, in the words of Triton's byte-size and BYTES checks. */
function countError(t: Target, expected: number, got: number): InferenceError {
  if (t.datatype === 'BYTES') {
    return got > expected
      ? CoreRequestErrors.stringElementsBeyond(t.name, t.model, expected + 1, expected)
      : CoreRequestErrors.stringElementCount(expected, t.name, t.model, got);
  }
  const size = ELEMENT_SIZE[t.datatype];
  return CoreRequestErrors.byteSizeMismatch(t.name, t.model, expected * size, got * size);
}

function convertValues(t: Target, values: readonly unknown[]): TensorData {
  switch (t.datatype) {
    case 'BOOL':
      return convertBool(t, values);
    case 'INT64':
      return convertInt64(t, values, new BigInt64Array(values.length), false);
    case 'UINT64':
      return convertInt64(t, values, new BigUint64Array(values.length), true);
    case 'FP32':
      return convertFloat(t, values, new Float32Array(values.length));
    case 'FP64':
      return convertFloat(t, values, new Float64Array(values.length));
    case 'BYTES':
      return values.map((v, i) => convertBytes(t, i, v));
    default:
      return convertSmallInt(t, values);
  }
}

function convertBool(t: Target, values: readonly unknown[]): Uint8Array {
  const out = new Uint8Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v !== 'boolean') throw badValue(t, i, v, 'a boolean');
    out[i] = v ? 1 : 0;
  }
  return out;
}

function convertSmallInt(t: Target, values: readonly unknown[]): TensorData {
  const [min, max] = SMALL_INT_RANGE[t.datatype] as [number, number];
  const out = allocateSmallInt(t.datatype, values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      throw badValue(t, i, v, `an integer in [${min}, ${max}] for datatype ${t.datatype}`);
    }
    out[i] = v;
  }
  return out;
}

function allocateSmallInt(datatype: DataType, n: number): Int8Array | Int16Array | Int32Array | Uint8Array | Uint16Array | Uint32Array {
  switch (datatype) {
    case 'INT8':
      return new Int8Array(n);
    case 'INT16':
      return new Int16Array(n);
    case 'INT32':
      return new Int32Array(n);
    case 'UINT8':
      return new Uint8Array(n);
    case 'UINT16':
      return new Uint16Array(n);
    default:
      return new Uint32Array(n);
  }
}

function convertInt64<A extends BigInt64Array | BigUint64Array>(
  t: Target,
  values: readonly unknown[],
  out: A,
  unsigned: boolean,
): A {
  const min = unsigned ? 0n : -(2n ** 63n);
  const max = unsigned ? 2n ** 64n - 1n : 2n ** 63n - 1n;
  for (let i = 0; i < values.length; i++) {
    const b = toBigInt(values[i], unsigned);
    if (b === undefined || b < min || b > max) {
      throw badValue(t, i, values[i], `an integer in [${min}, ${max}] for datatype ${t.datatype}`);
    }
    out[i] = b;
  }
  return out;
}

/** number | decimal string | bigint | Long-like → bigint; undefined when not an integer. */
export function toBigInt(v: unknown, unsigned: boolean): bigint | undefined {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : undefined;
  if (typeof v === 'string') return /^[+-]?\d+$/.test(v.trim()) ? BigInt(v.trim()) : undefined;
  if (isLongLike(v)) {
    const bits = (BigInt(v.high >>> 0) << 32n) | BigInt(v.low >>> 0);
    return unsigned ? BigInt.asUintN(64, bits) : BigInt.asIntN(64, bits);
  }
  return undefined;
}

function isLongLike(v: unknown): v is { low: number; high: number } {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as { low?: unknown; high?: unknown };
  return typeof o.low === 'number' && typeof o.high === 'number';
}

function convertFloat<A extends Float32Array | Float64Array>(t: Target, values: readonly unknown[], out: A): A {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v !== 'number') throw badValue(t, i, v, 'a number');
    out[i] = v;
  }
  return out;
}

function convertBytes(t: Target, i: number, v: unknown): Uint8Array {
  if (v instanceof Uint8Array) return v.byteLength === 0 ? EMPTY_BYTES_ELEMENT : new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  if (typeof v === 'string') {
    const b = Buffer.from(v, 'base64');
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  }
  throw badValue(t, i, v, 'bytes');
}

function badValue(t: Target, i: number, v: unknown, expected: string): InferenceError {
  const got = typeof v === 'object' ? JSON.stringify(v) : String(v);
  return InferenceError.invalidArg(
    `'${t.field}' element ${i} of input '${t.name}' for model '${t.model}' must be ${expected}, got ${got}`,
  );
}

/**
 * TensorData → typed contents (int64/uint64 as decimal strings, exact through proto-loader; BYTES
 * as Uint8Arrays). FP16/BF16 have no typed field: INVALID_ARG.
 */
export function tensorDataToContents(tensor: Tensor): InferTensorContents {
  const { datatype, data, name } = tensor;
  const field = CONTENTS_FIELD[datatype];
  if (field === undefined) {
    throw InferenceError.invalidArg(`${datatype} tensor '${name}' has no typed contents field: use raw contents`);
  }
  if (isBytesData(data)) return { bytes_contents: data.slice() };
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) {
    return { [field]: Array.from(data, (b) => b.toString()) };
  }
  if (datatype === 'BOOL') return { bool_contents: Array.from(data, (v) => v !== 0) };
  return { [field]: Array.from(data as ArrayLike<number>) };
}

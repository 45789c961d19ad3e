/**
 * Edge values of every v2 datatype in each wire form (raw little-endian bytes, JSON literal text,
 * gRPC typed contents), and the conversion of a JSON response's `data` back to raw bytes, for the
 * datatype matrix test (test/datatypes.e2e-spec.ts). Expected results are compared as bytes.
 */
import { JsonNumber, type DataType } from '@nereid/tensor';

export const DATATYPES: readonly DataType[] = [
  'BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64',
  'FP16', 'FP32', 'FP64', 'BYTES', 'BF16',
];

/** gRPC InferTensorContents as @grpc/proto-loader takes them (64-bit integers as decimal strings). */
export type TypedContents = Record<string, (boolean | number | string | Buffer)[]>;

export interface Values {
  /** Element count (the tensor is sent as shape [1, count]). */
  count: number;
  /** Binary form: the tensor's raw bytes (BYTES: 4-byte length prefixes). */
  raw: Buffer;
  /** JSON form: the text of the `data` array and the raw bytes it stands for. */
  json: { text: string; count: number; raw: Buffer };
  /** gRPC typed contents; undefined for FP16/BF16 (no typed field). */
  typed?: TypedContents;
}

function ints(size: 1 | 2 | 4 | 8, signed: boolean, values: bigint[]): Buffer {
  const b = Buffer.alloc(size * values.length);
  values.forEach((v, i) => {
    if (size === 8) {
      if (signed) b.writeBigInt64LE(v, i * 8);
      else b.writeBigUInt64LE(v, i * 8);
    } else if (signed) {
      b.writeIntLE(Number(v), i * size, size);
    } else {
      b.writeUIntLE(Number(v), i * size, size);
    }
  });
  return b;
}

function halves(bits: number[]): Buffer {
  const b = Buffer.alloc(2 * bits.length);
  bits.forEach((v, i) => b.writeUInt16LE(v, i * 2));
  return b;
}

function floats(size: 4 | 8, values: number[]): Buffer {
  const b = Buffer.alloc(size * values.length);
  values.forEach((v, i) => (size === 4 ? b.writeFloatLE(v, i * 4) : b.writeDoubleLE(v, i * 8)));
  return b;
}

/** BYTES elements serialized as the binary form carries them. */
export function serializeBytes(elements: Buffer[]): Buffer {
  return Buffer.concat(elements.flatMap((e) => [ints(4, false, [BigInt(e.length)]), e]));
}

/** A float as JSON writes it exactly: NaN, Infinity, -Infinity, -0.0, else the shortest decimal. */
function floatText(v: number): string {
  return Object.is(v, -0) ? '-0.0' : String(v);
}

const INT_EDGES: Record<string, [1 | 2 | 4 | 8, boolean, bigint[]]> = {
  UINT8: [1, false, [0n, 255n, 7n]],
  UINT16: [2, false, [0n, 65535n, 1n]],
  UINT32: [4, false, [0n, 4294967295n, 1n]],
  UINT64: [8, false, [0n, 2n ** 64n - 1n, 2n ** 53n + 1n]],
  INT8: [1, true, [-128n, 127n, 0n]],
  INT16: [2, true, [-32768n, 32767n, -1n]],
  INT32: [4, true, [-2147483648n, 2147483647n, -1n]],
  INT64: [8, true, [-(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n + 1n, -(2n ** 53n) - 1n]],
};

const TYPED_FIELD: Record<string, string> = {
  UINT8: 'uint_contents', UINT16: 'uint_contents', UINT32: 'uint_contents', UINT64: 'uint64_contents',
  INT8: 'int_contents', INT16: 'int_contents', INT32: 'int_contents', INT64: 'int64_contents',
};

/** NaN, -0, ±inf, the smallest subnormal, the largest finite value and one more of each float type. */
const FP32_EDGES = [NaN, -0, Infinity, -Infinity, 2 ** -149, 3.4028234663852886e38, Math.fround(0.1)];
const FP64_EDGES = [NaN, -0, Infinity, -Infinity, 5e-324, Number.MAX_VALUE, 0.1];
/** The same for the half types, as bit patterns (quiet NaN, -0, +inf, -inf, min subnormal, max, 1). */
const FP16_BITS = [0x7e00, 0x8000, 0x7c00, 0xfc00, 0x0001, 0x7bff, 0x3c00];
const BF16_BITS = [0x7fc0, 0x8000, 0x7f80, 0xff80, 0x0001, 0x7f7f, 0x3f80];

/** BYTES: a NUL inside, bytes that are not UTF-8, an empty element, UTF-8 text. */
export const BYTES_EDGES = [Buffer.from('a\0b', 'latin1'), Buffer.from([0xff, 0xfe]), Buffer.alloc(0), Buffer.from('hé ☃', 'utf8')];
/** What JSON can carry of them (JSON strings are UTF-8 text). */
const BYTES_JSON = [Buffer.from('a\0b', 'latin1'), Buffer.alloc(0), Buffer.from('hé ☃', 'utf8')];

export function valuesOf(datatype: DataType): Values {
  const int = INT_EDGES[datatype];
  if (int) {
    const [size, signed, values] = int;
    const raw = ints(size, signed, values);
    const typed = values.map((v) => (size === 8 ? v.toString() : Number(v)));
    return { count: values.length, raw, json: { text: `[${values.join(',')}]`, count: values.length, raw }, typed: { [TYPED_FIELD[datatype]]: typed } };
  }
  switch (datatype) {
    case 'BOOL': {
      const raw = Buffer.from([1, 0, 1]);
      return { count: 3, raw, json: { text: '[true,false,true]', count: 3, raw }, typed: { bool_contents: [true, false, true] } };
    }
    case 'FP32':
    case 'FP64': {
      const edges = datatype === 'FP32' ? FP32_EDGES : FP64_EDGES;
      const raw = floats(datatype === 'FP32' ? 4 : 8, edges);
      const json = { text: `[${edges.map(floatText).join(',')}]`, count: edges.length, raw };
      return { count: edges.length, raw, json, typed: { [datatype === 'FP32' ? 'fp32_contents' : 'fp64_contents']: edges } };
    }
    case 'FP16':
    case 'BF16': {
      const bits = datatype === 'FP16' ? FP16_BITS : BF16_BITS;
      const raw = halves(bits);
      return { count: bits.length, raw, json: { text: '[1,2,3,4,5,6,7]', count: bits.length, raw } };
    }
    default: {
      const json = { text: JSON.stringify(BYTES_JSON.map((b) => b.toString('utf8'))), count: BYTES_JSON.length, raw: serializeBytes(BYTES_JSON) };
      return { count: BYTES_EDGES.length, raw: serializeBytes(BYTES_EDGES), json, typed: { bytes_contents: BYTES_EDGES } };
    }
  }
}

/** One zero element of `datatype` (BYTES: one `x`), for the inputs a request does not test. */
export function fillerOf(datatype: DataType): { raw: Buffer; typed?: TypedContents } {
  if (datatype === 'BYTES') return { raw: serializeBytes([Buffer.from('x')]), typed: { bytes_contents: [Buffer.from('x')] } };
  if (datatype === 'FP16' || datatype === 'BF16') return { raw: Buffer.alloc(2) };
  const v = valuesOf(datatype);
  const size = v.raw.length / v.count;
  const field = Object.keys(v.typed ?? {})[0];
  const zero = datatype === 'BOOL' ? false : size === 8 && !datatype.startsWith('FP') ? '0' : 0;
  return { raw: Buffer.alloc(size), typed: { [field]: [zero] } };
}

/** The `data` of a JSON response (read with JsonNumber literals kept) → the raw bytes it stands for. */
export function rawOfJson(datatype: DataType, data: unknown[]): Buffer {
  const num = (v: unknown): number => (v instanceof JsonNumber ? v.value : (v as number));
  const big = (v: unknown): bigint => (v instanceof JsonNumber ? BigInt(v.text) : BigInt(v as number));
  const int = INT_EDGES[datatype];
  if (int) return ints(int[0], int[1], data.map(big));
  switch (datatype) {
    case 'BOOL':
      return Buffer.from(data.map((v) => (v === true ? 1 : v === false ? 0 : 2)));
    case 'FP32':
      return floats(4, data.map(num));
    case 'FP64':
      return floats(8, data.map(num));
    case 'BYTES':
      return serializeBytes(data.map((s) => Buffer.from(s as string, 'utf8')));
    default:
      throw new Error(`${datatype} has no JSON form`);
  }
}

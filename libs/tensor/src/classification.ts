import { InferenceError } from './errors';
import { elementCount, type Tensor } from './tensor';
import { isBytesData } from './typed';

const utf8Encoder = new TextEncoder();

type Ranked = ArrayLike<number> | ArrayLike<bigint>;

/**
 * Classification extension: top-N entries of each batch item by value (descending, ties by lower
 * index) as BYTES strings `"<value>:<index>"` or `"<value>:<index>:<label>"`. Shape is
 * `[batch, min(N, per-item elements)]` when `batched`, else `[min(N, elements)]`.
 *
 * Values are printed as Triton's `std::to_string` does: integers plainly, FP32/FP64 with six
 * decimals (`0.750000`), `inf`/`-inf`/`nan`. Like Triton, BOOL, FP16, BF16 and BYTES outputs
 * are rejected. A label is appended only when `labels[index]` is a non-empty string.
 */
export function classify(tensor: Tensor, topN: number, batched: boolean, labels?: string[]): Tensor {
  const { data, datatype } = tensor;
  if (isBytesData(data) || datatype === 'BOOL' || datatype === 'FP16' || datatype === 'BF16') {
    throw InferenceError.invalidArg(
      `class result not available for output due to unsupported type '${datatype}'`,
    );
  }
  const total = elementCount(tensor.shape);
  const batch = batched ? (tensor.shape[0] ?? 0) : 1;
  const perItem = batched ? (batch === 0 ? elementCount(tensor.shape.slice(1)) : total / batch) : total;
  const k = Math.max(0, Math.min(topN, perItem));
  const isFloat = datatype === 'FP32' || datatype === 'FP64';
  const out: Uint8Array[] = [];
  for (let b = 0; b < batch; b++) {
    const start = b * perItem;
    for (const index of topIndices(data as Ranked, start, perItem, k)) {
      const value = data[start + index] as number | bigint;
      out.push(utf8Encoder.encode(entryText(value, index, isFloat, labels)));
    }
  }
  return { name: tensor.name, datatype: 'BYTES', shape: batched ? [batch, k] : [k], data: out };
}

function topIndices(values: Ranked, start: number, count: number, k: number): number[] {
  const idx = Array.from({ length: count }, (_, i) => i);
  idx.sort((a, b) => compareDescending(values[start + a], values[start + b]) || a - b);
  return idx.slice(0, k);
}

/** Larger first; NaN ranks below every number. */
function compareDescending(x: number | bigint, y: number | bigint): number {
  if (x !== x) return y !== y ? 0 : 1;
  if (y !== y) return -1;
  return x > y ? -1 : x < y ? 1 : 0;
}

function entryText(value: number | bigint, index: number, isFloat: boolean, labels?: string[]): string {
  const text = `${isFloat ? formatFixed6(value as number) : value.toString()}:${index}`;
  const label = labels?.[index];
  return label ? `${text}:${label}` : text;
}

/** C's `%f`: six decimals, `inf` / `-inf` / `nan` (the sign of a NaN is not kept). */
export function formatFixed6(v: number): string {
  if (Number.isNaN(v)) return 'nan';
  if (v === Infinity) return 'inf';
  if (v === -Infinity) return '-inf';
  if (Math.abs(v) >= 1e21) return `${BigInt(v).toString()}.000000`;
  return Object.is(v, -0) ? '-0.000000' : v.toFixed(6);
}

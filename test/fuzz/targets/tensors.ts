/**
 * Pieces the tensor-decoding targets share: the invariants of a decoded request (checked on every
 * accepted input) and seed tensors of every datatype in wire form.
 */
import { DATATYPES, ELEMENT_SIZE, type DataType, type Tensor } from '@nereid/tensor';
import { check } from '../target';

/**
 * A decoded tensor is consistent and no larger than the bytes that carried it: its data has one
 * element per element of its shape, and a request `wireBytes` long holds at most `wireBytes`
 * elements (at least one byte each: JSON's digits, a bit-packed BOOL is not a format Nereid reads).
 */
export function checkTensors(inputs: readonly Tensor[], wireBytes: number): void {
  let total = 0;
  for (const t of inputs) {
    check(Array.isArray(t.shape) && t.shape.every((d) => Number.isSafeInteger(d) && d >= 0), `input '${t.name}' has shape ${JSON.stringify(t.shape)}`);
    const count = t.shape.reduce((a, d) => a * d, 1);
    check(t.data.length === count, `input '${t.name}' has ${t.data.length} elements for shape ${JSON.stringify(t.shape)}`);
    total += count;
  }
  // A raw binary BYTES request is one element, however short its body.
  check(total <= Math.max(wireBytes, 1), `${total} elements decoded from ${wireBytes} bytes`);
}

/** Element values that exercise each datatype's edges, as little-endian bytes. */
export function seedTensorBytes(datatype: DataType, count: number): Uint8Array {
  if (datatype === 'BYTES') {
    const parts = Array.from({ length: count }, (_, i) => Buffer.from(['', 'a', 'héllo', '\u0000x'][i % 4], 'utf8'));
    return Buffer.concat(parts.flatMap((p) => [Buffer.from(Uint32Array.of(p.length).buffer), p]));
  }
  const size = ELEMENT_SIZE[datatype];
  const out = new Uint8Array(size * count);
  for (let i = 0; i < out.length; i++) out[i] = datatype === 'BOOL' ? i % 2 : (i * 37 + 11) & 0xff;
  return out;
}

/** JSON `data` of a datatype for `count` elements (numbers within range, strings for BYTES). */
export function seedJsonData(datatype: DataType, count: number): unknown[] {
  return Array.from({ length: count }, (_, i) => {
    if (datatype === 'BYTES') return ['abc', '', 'x y'][i % 3];
    if (datatype === 'BOOL') return i % 2 === 0;
    if (datatype.startsWith('FP') || datatype === 'BF16') return [1.5, -0.25, 0, 3][i % 4];
    if (datatype.startsWith('UINT')) return [0, 1, 200, 7][i % 4];
    return [-1, 0, 100, -7][i % 4];
  });
}

export const ALL_DATATYPES: readonly DataType[] = DATATYPES;

/** Tokens of KServe v2 requests (JSON keys, datatypes, parameter names, edge values). */
export const KSERVE_TOKENS: readonly string[] = [
  '"inputs"', '"outputs"', '"name"', '"datatype"', '"shape"', '"data"', '"parameters"', '"id"',
  '"binary_data_size"', '"binary_data_output"', '"binary_data"', '"classification"',
  '"shared_memory_region"', '"shared_memory_offset"', '"shared_memory_byte_size"',
  '"sequence_id"', '"sequence_start"', '"sequence_end"', '"priority"', '"timeout"', '"headers"',
  ...DATATYPES.map((d) => `"${d}"`),
  '{', '}', '[', ']', ':', ',', '"', '\\u0000', '\\ud800', '\\"', 'null', 'true', 'false', 'NaN', 'Infinity', '-Infinity', 'Inf',
  '-1', '0', '1e400', '-0', '1.5', '18446744073709551616', '9007199254740993', '2147483648', '[[', ']]', '[]', '{}',
];

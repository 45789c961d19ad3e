import { InferenceError } from '@nereid/protocol';
import type { DataType } from './datatype';
import { tensorDataFromContents, tensorDataToContents, toBigInt, type InferTensorContents } from './grpc-contents';
import type { Tensor, TensorData } from './tensor';

const fromContents = (dt: DataType, shape: number[], c: InferTensorContents) => tensorDataFromContents(dt, shape, c, 'IN', 'm');
const tensor = (datatype: DataType, shape: number[], data: TensorData): Tensor => ({ name: 'T', datatype, shape, data });

function errorOf(fn: () => unknown): InferenceError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(InferenceError);
    expect((e as InferenceError).code).toBe('INVALID_ARG');
    return e as InferenceError;
  }
  throw new Error('expected an error');
}

describe('gRPC typed contents', () => {
  const cases: [DataType, InferTensorContents, TensorData][] = [
    ['BOOL', { bool_contents: [true, false] }, new Uint8Array([1, 0])],
    ['INT8', { int_contents: [-128, 127] }, new Int8Array([-128, 127])],
    ['INT16', { int_contents: [-32768, 32767] }, new Int16Array([-32768, 32767])],
    ['INT32', { int_contents: [-(2 ** 31), 2 ** 31 - 1] }, new Int32Array([-(2 ** 31), 2 ** 31 - 1])],
    ['INT64', { int64_contents: ['-9223372036854775808', '9223372036854775807'] }, new BigInt64Array([-(2n ** 63n), 2n ** 63n - 1n])],
    ['UINT8', { uint_contents: [0, 255] }, new Uint8Array([0, 255])],
    ['UINT16', { uint_contents: [0, 65535] }, new Uint16Array([0, 65535])],
    ['UINT32', { uint_contents: [0, 2 ** 32 - 1] }, new Uint32Array([0, 2 ** 32 - 1])],
    ['UINT64', { uint64_contents: ['0', '18446744073709551615'] }, new BigUint64Array([0n, 2n ** 64n - 1n])],
    ['FP32', { fp32_contents: [1.5, -2] }, new Float32Array([1.5, -2])],
    ['FP64', { fp64_contents: [0.1, 1e300] }, new Float64Array([0.1, 1e300])],
  ];

  it.each(cases)('%s round-trips through contents', (dt, contents, typed) => {
    const data = fromContents(dt, [2], contents);
    expect(data).toEqual(typed);
    expect(data.constructor).toBe(typed.constructor);
    expect(tensorDataToContents(tensor(dt, [2], data))).toEqual(contents);
  });

  it('shares one element for every empty bytes_contents entry (issue 16: a view each cost ~200 bytes for 2 on the wire)', () => {
    const data = fromContents('BYTES', [3], { bytes_contents: [Buffer.alloc(0), Buffer.from('x'), new Uint8Array(0)] }) as Uint8Array[];
    expect(data.map((e) => Buffer.from(e).toString())).toEqual(['', 'x', '']);
    expect(data[0]).toBe(data[2]);
  });

  it('round-trips BYTES (Buffers from proto-loader, base64 strings with bytes: String)', () => {
    const data = fromContents('BYTES', [2], { bytes_contents: [Buffer.from('ab'), 'Y2Q='] }) as Uint8Array[];
    expect(data.map((b) => Buffer.from(b).toString())).toEqual(['ab', 'cd']);
    expect(Object.getPrototypeOf(data[0])).toBe(Uint8Array.prototype);
    const back = tensorDataToContents(tensor('BYTES', [2], data));
    expect(back.bytes_contents?.map((b) => Buffer.from(b as Uint8Array).toString())).toEqual(['ab', 'cd']);
  });

  it('reads int64 values given as numbers, strings, bigints and Long objects', () => {
    const longMinusOne = { low: -1, high: -1, unsigned: false };
    const longMin = { low: 0, high: 0x80000000 | 0, unsigned: false };
    expect(fromContents('INT64', [4], { int64_contents: [5, '-7', 9n, longMinusOne] })).toEqual(new BigInt64Array([5n, -7n, 9n, -1n]));
    expect(fromContents('INT64', [1], { int64_contents: [longMin] })).toEqual(new BigInt64Array([-(2n ** 63n)]));
    const longMax = { low: -1, high: -1, unsigned: true };
    expect(fromContents('UINT64', [2], { uint64_contents: [longMax, 3] })).toEqual(new BigUint64Array([2n ** 64n - 1n, 3n]));
    expect(toBigInt(' +12 ', false)).toBe(12n);
    expect(toBigInt('1.5', false)).toBeUndefined();
    expect(toBigInt({}, false)).toBeUndefined();
  });

  it('accepts empty tensors and unset fields', () => {
    expect(fromContents('FP32', [0], {})).toEqual(new Float32Array(0));
    expect(fromContents('BYTES', [0, 2], { bytes_contents: [] })).toEqual([]);
  });

  it('ignores empty other fields (proto-loader arrays: true)', () => {
    const c: InferTensorContents = { bool_contents: [], int_contents: [1], fp32_contents: [], bytes_contents: [] };
    expect(fromContents('INT32', [1], c)).toEqual(new Int32Array([1]));
  });

  it('rejects the wrong field for the datatype', () => {
    expect(errorOf(() => fromContents('FP32', [2], { int_contents: [1, 2] })).message).toBe(
      "unexpected explicit tensor data for input tensor 'IN' for model 'm' of type 'INT32', expected datatype 'FP32'",
    );
    expect(errorOf(() => fromContents('INT8', [1], { uint_contents: [1] })).message).toBe(
      "unexpected explicit tensor data for input tensor 'IN' for model 'm' of type 'UINT32', expected datatype 'INT8'",
    );
    expect(errorOf(() => fromContents('INT64', [1], { int64_contents: [1], uint64_contents: [1] })).message).toBe(
      "unexpected explicit tensor data for input tensor 'IN' for model 'm', binary data was already supplied.",
    );
  });

  it('rejects FP16/BF16 typed contents', () => {
    expect(errorOf(() => fromContents('FP16', [1], { fp32_contents: [1] })).message).toBe(
      "unexpected explicit tensor data for input tensor 'IN' for model 'm' of type 'FP32', expected datatype 'FP16'",
    );
    expect(errorOf(() => fromContents('FP16', [1], {})).message).toBe(
      "FP16 data for input 'IN' for model 'm' must be sent in raw_input_contents, typed contents have no FP16 field",
    );
    expect(errorOf(() => fromContents('BF16', [1], {})).message).toContain('BF16 data');
    expect(errorOf(() => tensorDataToContents(tensor('FP16', [1], new Uint16Array(1)))).message).toBe(
      "FP16 tensor 'T' has no typed contents field: use raw contents",
    );
  });

  it('rejects a wrong element count', () => {
    expect(errorOf(() => fromContents('INT32', [2, 2], { int_contents: [1, 2, 3] })).message).toBe(
      "input byte size mismatch for input 'IN' for model 'm'. Expected 16, got 12",
    );
    expect(errorOf(() => fromContents('BOOL', [1], {})).message).toBe("input byte size mismatch for input 'IN' for model 'm'. Expected 1, got 0");
    expect(errorOf(() => fromContents('BYTES', [2], { bytes_contents: ['YQ=='] })).message).toBe(
      "expected 2 string elements for inference input 'IN' for model 'm', got 1",
    );
    expect(errorOf(() => fromContents('BYTES', [1], { bytes_contents: ['YQ==', 'Yg=='] })).message).toBe(
      "unexpected number of string elements 2 for inference input 'IN' for model 'm', expecting 1",
    );
  });

  const bad: [DataType, InferTensorContents, string][] = [
    ['INT8', { int_contents: [128] }, "'int_contents' element 0 of input 'IN' for model 'm' must be an integer in [-128, 127] for datatype INT8, got 128"],
    ['INT16', { int_contents: [1.5] }, 'must be an integer in [-32768, 32767] for datatype INT16, got 1.5'],
    ['UINT8', { uint_contents: [256] }, 'must be an integer in [0, 255] for datatype UINT8, got 256'],
    ['UINT16', { uint_contents: [-1] }, 'must be an integer in [0, 65535] for datatype UINT16, got -1'],
    ['INT64', { int64_contents: ['9223372036854775808'] }, 'for datatype INT64, got 9223372036854775808'],
    ['INT64', { int64_contents: ['abc'] }, 'for datatype INT64, got abc'],
    ['UINT64', { uint64_contents: ['-1'] }, 'must be an integer in [0, 18446744073709551615] for datatype UINT64, got -1'],
    ['BOOL', { bool_contents: [1 as unknown as boolean] }, "'bool_contents' element 0 of input 'IN' for model 'm' must be a boolean, got 1"],
    ['FP32', { fp32_contents: ['1' as unknown as number] }, 'must be a number, got 1'],
    ['BYTES', { bytes_contents: [5 as unknown as Uint8Array] }, 'must be bytes, got 5'],
  ];

  it.each(bad)('rejects a bad %s value', (dt, contents, text) => {
    expect(errorOf(() => fromContents(dt, [1], contents)).message).toContain(text);
  });
});

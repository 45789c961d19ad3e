import { InferenceError } from '@nereid/protocol';
import { byteSizeOf, serializeBytesElements, tensorDataFromBytes, tensorDataToBytes } from './binary-codec';
import type { DataType } from './datatype';
import type { Tensor, TensorData } from './tensor';
import type { NumericTensorData } from './typed';

const fromBytes = (dt: DataType, shape: number[], bytes: Uint8Array) => tensorDataFromBytes(dt, shape, bytes, 'IN', 'm');
const tensor = (datatype: DataType, shape: number[], data: TensorData): Tensor => ({ name: 'T', datatype, shape, data });
const u8 = (data: ArrayBufferView) => new Uint8Array(data.buffer, data.byteOffset, data.byteLength);

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

describe('binary codec, fixed-width types', () => {
  const cases: [DataType, NumericTensorData][] = [
    ['BOOL', new Uint8Array([1, 0, 1, 1])],
    ['UINT8', new Uint8Array([0, 1, 254, 255])],
    ['UINT16', new Uint16Array([0, 1, 65534, 65535])],
    ['UINT32', new Uint32Array([0, 1, 2 ** 32 - 2, 2 ** 32 - 1])],
    ['UINT64', new BigUint64Array([0n, 1n, 2n ** 63n, 2n ** 64n - 1n])],
    ['INT8', new Int8Array([-128, -1, 0, 127])],
    ['INT16', new Int16Array([-32768, -1, 0, 32767])],
    ['INT32', new Int32Array([-(2 ** 31), -1, 0, 2 ** 31 - 1])],
    ['INT64', new BigInt64Array([-(2n ** 63n), -1n, 0n, 2n ** 63n - 1n])],
    ['FP16', new Uint16Array([0x3c00, 0x7c00, 0xfc00, 0x7e00])],
    ['BF16', new Uint16Array([0x3f80, 0x7f80, 0xff80, 0x7fc0])],
    ['FP32', new Float32Array([1.5, -Infinity, NaN, -0])],
    ['FP64', new Float64Array([1e-300, Infinity, NaN, 0.1])],
  ];

  it.each(cases)('%s round-trips through bytes', (dt, data) => {
    const bytes = tensorDataToBytes(tensor(dt, [2, 2], data));
    expect(bytes.byteLength).toBe(data.byteLength);
    expect(byteSizeOf(tensor(dt, [2, 2], data))).toBe(data.byteLength);
    const back = fromBytes(dt, [2, 2], bytes);
    expect(back.constructor).toBe(data.constructor);
    expect(u8(back as ArrayBufferView)).toEqual(u8(data as ArrayBufferView));
  });

  it('shares one element for every empty BYTES element (a view costs ~120 bytes for 4 on the wire)', () => {
    const bytes = Buffer.from([0, 0, 0, 0, 1, 0, 0, 0, 120, 0, 0, 0, 0]);
    const data = tensorDataFromBytes('BYTES', [3], bytes, 'IN', 'm') as Uint8Array[];
    expect(data.map((e) => Buffer.from(e).toString())).toEqual(['', 'x', '']);
    expect(data[0]).toBe(data[2]);
    expect(data[1].buffer).toBe(bytes.buffer);
  });

  it('writes little-endian bytes', () => {
    expect(Array.from(tensorDataToBytes(tensor('INT32', [1], new Int32Array([0x01020304]))))).toEqual([4, 3, 2, 1]);
    const back = fromBytes('UINT16', [2], new Uint8Array([0x01, 0x02, 0xff, 0x00]));
    expect(Array.from(back as Uint16Array)).toEqual([0x0201, 0x00ff]);
  });

  it('returns views without copying when aligned', () => {
    const data = new Float32Array([1, 2, 3]);
    const bytes = tensorDataToBytes(tensor('FP32', [3], data));
    expect(bytes.buffer).toBe(data.buffer);
    const body = new Uint8Array(64);
    const section = body.subarray(16, 28);
    section.set(bytes);
    const view = fromBytes('FP32', [3], section) as Float32Array;
    expect(view.buffer).toBe(body.buffer);
    expect(view.byteOffset).toBe(16);
    expect(Array.from(view)).toEqual([1, 2, 3]);
  });

  it('copies when the byte offset is misaligned', () => {
    const body = new Uint8Array(64);
    const section = body.subarray(3, 19);
    section.set(u8(new BigInt64Array([-2n, 7n])));
    const data = fromBytes('INT64', [2], section) as BigInt64Array;
    expect(data.buffer).not.toBe(body.buffer);
    expect(Array.from(data)).toEqual([-2n, 7n]);
  });

  it('accepts empty tensors', () => {
    expect(fromBytes('FP32', [0, 4], new Uint8Array(0))).toEqual(new Float32Array(0));
    expect(tensorDataToBytes(tensor('INT8', [0], new Int8Array(0))).byteLength).toBe(0);
  });

  it('rejects a byte size mismatch with Triton wording', () => {
    expect(errorOf(() => fromBytes('FP32', [2, 2], new Uint8Array(15))).message).toBe(
      "input byte size mismatch for input 'IN' for model 'm'. Expected 16, got 15",
    );
    expect(errorOf(() => fromBytes('INT64', [1], new Uint8Array(16))).message).toBe(
      "input byte size mismatch for input 'IN' for model 'm'. Expected 8, got 16",
    );
    expect(errorOf(() => fromBytes('BOOL', [0], new Uint8Array(1))).message).toContain('Expected 0, got 1');
  });
});

describe('binary codec, BYTES', () => {
  const enc = (s: string) => new Uint8Array(Buffer.from(s, 'utf8'));

  it('serializes with 4-byte little-endian length prefixes and parses back as views', () => {
    const data = [enc('ab'), enc(''), enc('☃')];
    const bytes = tensorDataToBytes(tensor('BYTES', [3], data));
    expect(Buffer.from(bytes).toString('hex')).toBe('020000006162' + '00000000' + '03000000e29883');
    expect(byteSizeOf(tensor('BYTES', [3], data))).toBe(bytes.byteLength);
    const back = fromBytes('BYTES', [3], bytes) as Uint8Array[];
    expect(back).toEqual(data);
    expect(back[0].buffer).toBe(bytes.buffer);
  });

  it('parses lengths above 255 (little-endian)', () => {
    const big = new Uint8Array(300).fill(7);
    const bytes = serializeBytesElements([big]);
    expect(Array.from(bytes.subarray(0, 4))).toEqual([44, 1, 0, 0]);
    expect((fromBytes('BYTES', [1], bytes) as Uint8Array[])[0]).toEqual(big);
  });

  it('accepts empty BYTES tensors', () => {
    expect(fromBytes('BYTES', [0], new Uint8Array(0))).toEqual([]);
    expect(tensorDataToBytes(tensor('BYTES', [0], [])).byteLength).toBe(0);
  });

  it('rejects too few elements', () => {
    const bytes = serializeBytesElements([enc('a'), enc('b')]);
    expect(errorOf(() => fromBytes('BYTES', [3], bytes)).message).toBe(
      "expected 3 string elements for inference input 'IN' for model 'm', got 2",
    );
  });

  it('rejects too many elements', () => {
    const bytes = serializeBytesElements([enc('a'), enc('b'), enc('c'), enc('d')]);
    expect(errorOf(() => fromBytes('BYTES', [2], bytes)).message).toBe(
      "unexpected number of string elements 3 for inference input 'IN' for model 'm', expecting 2",
    );
  });

  it('rejects a truncated length prefix', () => {
    const bytes = new Uint8Array([1, 0, 0, 0, 0x61, 2, 0]);
    expect(errorOf(() => fromBytes('BYTES', [2], bytes)).message).toBe(
      "incomplete string length indicator for inference input 'IN' for model 'm', expecting 4 bytes but only 2 bytes available. Please make sure the string length indicator is in one buffer.",
    );
  });

  it('rejects a length that runs past the end', () => {
    const bytes = new Uint8Array([5, 0, 0, 0, 0x61, 0x62]);
    expect(errorOf(() => fromBytes('BYTES', [1], bytes)).message).toBe(
      "element byte size exceeds the end of the buffer for inference input 'IN' for model 'm': element 0 declares 5 bytes, 2 remain",
    );
  });
});

import { InferenceError } from '@nereid/protocol';
import { classify, formatFixed6 } from './classification';
import type { DataType } from './datatype';
import type { Tensor, TensorData } from './tensor';

const tensor = (datatype: DataType, shape: number[], data: TensorData): Tensor => ({ name: 'OUT', datatype, shape, data });
const texts = (t: Tensor) => (t.data as Uint8Array[]).map((b) => Buffer.from(b).toString());

describe('classify', () => {
  it('returns top-N of a non-batched FP32 output as value:index', () => {
    const out = classify(tensor('FP32', [4], new Float32Array([0.1, 0.7, 0.05, 0.15])), 2, false);
    expect(out.datatype).toBe('BYTES');
    expect(out.name).toBe('OUT');
    expect(out.shape).toEqual([2]);
    expect(texts(out)).toEqual(['0.700000:1', '0.150000:3']);
  });

  it('ranks each batch item separately and shapes [batch, k]', () => {
    const out = classify(tensor('INT32', [2, 3], new Int32Array([1, 9, 5, 7, 2, 8])), 2, true);
    expect(out.shape).toEqual([2, 2]);
    expect(texts(out)).toEqual(['9:1', '5:2', '8:2', '7:0']);
  });

  it('caps N at the elements per item', () => {
    const out = classify(tensor('UINT8', [1, 3], new Uint8Array([3, 1, 2])), 10, true);
    expect(out.shape).toEqual([1, 3]);
    expect(texts(out)).toEqual(['3:0', '2:2', '1:1']);
  });

  it('appends labels when given, skipping missing or empty ones', () => {
    const out = classify(tensor('FP64', [3], new Float64Array([0.2, 0.5, 0.3])), 3, false, ['cat', '', 'dog']);
    expect(texts(out)).toEqual(['0.500000:1', '0.300000:2:dog', '0.200000:0:cat']);
    const short = classify(tensor('FP64', [3], new Float64Array([0.2, 0.5, 0.3])), 1, false, ['cat']);
    expect(texts(short)).toEqual(['0.500000:1']);
  });

  it('ranks 64-bit integers exactly and breaks ties by lower index', () => {
    const data = new BigInt64Array([2n ** 62n, 2n ** 62n + 1n, -5n, 2n ** 62n + 1n]);
    expect(texts(classify(tensor('INT64', [4], data), 3, false))).toEqual([
      '4611686018427387905:1', '4611686018427387905:3', '4611686018427387904:0',
    ]);
    const u = classify(tensor('UINT64', [2], new BigUint64Array([1n, 2n ** 64n - 1n])), 1, false);
    expect(texts(u)).toEqual(['18446744073709551615:1']);
  });

  it('puts NaN last', () => {
    expect(texts(classify(tensor('FP32', [3], new Float32Array([NaN, -1, 2])), 3, false))).toEqual([
      '2.000000:2', '-1.000000:1', 'nan:0',
    ]);
  });

  it('handles zero-sized batches and N = 0', () => {
    expect(classify(tensor('FP32', [0, 5], new Float32Array(0)), 2, true).shape).toEqual([0, 2]);
    expect(classify(tensor('FP32', [3], new Float32Array(3)), 0, false).shape).toEqual([0]);
  });

  it.each(['BOOL', 'FP16', 'BF16'] as DataType[])('rejects %s like Triton', (dt) => {
    const data = dt === 'BOOL' ? new Uint8Array(2) : new Uint16Array(2);
    try {
      classify(tensor(dt, [2], data), 1, false);
      throw new Error('expected an error');
    } catch (e) {
      expect(e).toBeInstanceOf(InferenceError);
      expect((e as InferenceError).code).toBe('INVALID_ARG');
      expect((e as InferenceError).message).toBe(`class result not available for output due to unsupported type '${dt}'`);
    }
  });

  it('rejects BYTES', () => {
    expect(() => classify(tensor('BYTES', [1], [new Uint8Array(1)]), 1, false)).toThrow(
      "class result not available for output due to unsupported type 'BYTES'",
    );
  });
});

describe('formatFixed6', () => {
  it("prints like C's %f", () => {
    expect(formatFixed6(15.34623)).toBe('15.346230');
    expect(formatFixed6(-0)).toBe('-0.000000');
    expect(formatFixed6(-1e-9)).toBe('-0.000000');
    expect(formatFixed6(1e21)).toBe('1000000000000000000000.000000');
    expect(formatFixed6(Infinity)).toBe('inf');
    expect(formatFixed6(-Infinity)).toBe('-inf');
    expect(formatFixed6(NaN)).toBe('nan');
  });
});

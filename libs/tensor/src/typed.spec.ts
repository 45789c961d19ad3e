import { allocateTensorData, bytesView, isBytesData, viewAs } from './typed';

describe('typed helpers', () => {
  it('allocates zeroed data of the right kind', () => {
    expect(allocateTensorData('FP16', 3)).toEqual(new Uint16Array(3));
    expect(allocateTensorData('INT64', 2)).toEqual(new BigInt64Array(2));
    expect(allocateTensorData('BOOL', 1)).toEqual(new Uint8Array(1));
    const bytes = allocateTensorData('BYTES', 2);
    expect(isBytesData(bytes)).toBe(true);
    expect(bytes).toEqual([new Uint8Array(0), new Uint8Array(0)]);
  });

  it('views aligned bytes and copies misaligned ones', () => {
    const buf = new Uint8Array(17);
    buf.set([0, 0, 0x80, 0x3f], 4);
    buf.set([0, 0, 0x80, 0x3f], 13);
    const aligned = viewAs('FP32', buf.subarray(4, 8)) as Float32Array;
    expect(aligned.buffer).toBe(buf.buffer);
    expect(aligned[0]).toBe(1);
    const copied = viewAs('FP32', buf.subarray(13, 17)) as Float32Array;
    expect(copied.buffer).not.toBe(buf.buffer);
    expect(copied[0]).toBe(1);
    expect(bytesView(aligned)).toEqual(new Uint8Array([0, 0, 0x80, 0x3f]));
  });
});

describe('viewAs with Node Buffers', () => {
  it('copies unaligned Buffer bytes instead of viewing the pool', () => {
    const pool = Buffer.concat([Buffer.from('abc'), Buffer.from(Int32Array.from([7, 8, 9]).buffer)]);
    const data = viewAs('INT32', pool.subarray(3, 15));
    expect(Array.from(data as Int32Array)).toEqual([7, 8, 9]);
  });
});

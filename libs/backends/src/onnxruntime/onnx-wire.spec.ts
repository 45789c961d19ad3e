import { readVarint, wireFields } from './onnx-wire';

describe('onnx-wire', () => {
  it('splits a message into its fields as spans: varint, fixed64, length-delimited, fixed32', () => {
    // 1: varint 300; 2: fixed64; 3: bytes "ab"; 4: fixed32
    const buf = Uint8Array.from([0x08, 0xac, 0x02, 0x11, 1, 2, 3, 4, 5, 6, 7, 8, 0x1a, 0x02, 0x61, 0x62, 0x25, 9, 9, 9, 9]);
    expect(wireFields(buf)).toEqual([
      { no: 1, wire: 0, start: 0, end: 3, payloadStart: 1, varint: 300 },
      { no: 2, wire: 1, start: 3, end: 12, payloadStart: 4, varint: undefined },
      { no: 3, wire: 2, start: 12, end: 16, payloadStart: 14, varint: undefined },
      { no: 4, wire: 5, start: 16, end: 21, payloadStart: 17, varint: undefined },
    ]);
  });

  it('reads 10-byte varints unsigned', () => {
    const minusOne = Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    const pos = { at: 0 };
    expect(readVarint(minusOne, pos)).toBe(2 ** 64 - 1);
    expect(pos.at).toBe(10);
  });

  it('names what is malformed', () => {
    expect(() => wireFields(Uint8Array.from([0x1a, 0x05, 0x01]))).toThrow('malformed ONNX model: truncated field');
    expect(() => wireFields(Uint8Array.from([0x11, 1, 2]))).toThrow('malformed ONNX model: truncated field');
    expect(() => wireFields(Uint8Array.from([0x08, 0x80]))).toThrow('malformed ONNX model: truncated varint');
    expect(() => wireFields(Uint8Array.from([0x0b]))).toThrow('malformed ONNX model: unsupported wire type 3');
    expect(() => readVarint(new Uint8Array(11).fill(0x80), { at: 0 })).toThrow('malformed ONNX model: varint too long');
  });
});

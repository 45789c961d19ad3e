import { BlobBuilder, encodeFrame, FrameReader, type Frame } from './frames';

describe('frames', () => {
  const frameBytes = (type: number, header: object, payloads: Uint8Array[]): Buffer => {
    const blob = new BlobBuilder();
    const offsets = payloads.map((p) => blob.add(p));
    return Buffer.concat(encodeFrame(type, { ...header, offsets }, blob));
  };

  it('round-trips header and 8-aligned payloads, however the stream is chunked', () => {
    const a = new Uint8Array([1, 2, 3]);
    const b = new Uint8Array(new Float64Array([1.5, -2]).buffer);
    const stream = Buffer.concat([frameBytes(2, { x: 'é' }, [a, b]), frameBytes(11, { y: 1 }, []), frameBytes(3, {}, [new Uint8Array(70_000).fill(7)])]);
    for (const chunk of [1, 3, 7, 4096, stream.length]) {
      const frames: Frame[] = [];
      const reader = new FrameReader((f) => frames.push(f));
      for (let pos = 0; pos < stream.length; pos += chunk) reader.push(stream.subarray(pos, pos + chunk));
      expect(frames.map((f) => f.type)).toEqual([2, 11, 3]);
      const [first, , third] = frames;
      expect(first.header).toEqual({ x: 'é', offsets: [0, 8] });
      expect(first.blob.byteOffset % 8).toBe(0);
      expect(Array.from(first.blob.subarray(0, 3))).toEqual([1, 2, 3]);
      expect(Array.from(new Float64Array(first.blob.buffer, first.blob.byteOffset + 8, 2))).toEqual([1.5, -2]);
      expect(third.blob.subarray(0, 70_000).every((v) => v === 7)).toBe(true);
    }
  });
});

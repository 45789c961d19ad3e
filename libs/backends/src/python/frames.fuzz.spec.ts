import fc from 'fast-check';
import { fuzz, fuzzParams } from '../../../../test/helpers/fuzz';
import { BlobBuilder, encodeFrame, FrameError, FrameReader, type Frame } from './frames';

const jsonHeaderArb = fc.oneof(fc.jsonValue().filter((v) => v !== undefined), fc.array(fc.oneof(fc.integer(), fc.string())));
const frameArb = fc.record({
  type: fc.integer({ min: 0, max: 255 }),
  header: jsonHeaderArb,
  payloads: fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 4 }),
});

/** Splits `bytes` at the given cut points (chunking as a pipe might). */
function chunked(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let start = 0;
  for (const p of [...points, bytes.length]) {
    out.push(bytes.subarray(start, p));
    start = p;
  }
  return out;
}

describe('python frame reader (fuzz)', () => {
  it('round-trips any frames, however the stream is chunked', () => {
    fuzz(
      fc.property(fc.array(frameArb, { maxLength: 4 }), fc.array(fc.nat(), { maxLength: 8 }), (frames, cuts) => {
        const offsets: number[][] = [];
        const stream = Buffer.concat(
          frames.flatMap((f) => {
            const blob = new BlobBuilder();
            offsets.push(f.payloads.map((p) => blob.add(p)));
            return encodeFrame(f.type, f.header, blob);
          }),
        );
        const got: Frame[] = [];
        const reader = new FrameReader((f) => got.push(f));
        for (const c of chunked(stream, cuts)) reader.push(c);
        expect(got.map((f) => [f.type, f.header])).toEqual(frames.map((f) => [f.type, JSON.parse(JSON.stringify(f.header))]));
        got.forEach((f, i) => {
          frames[i].payloads.forEach((p, j) => {
            expect(Buffer.from(f.blob.subarray(offsets[i][j], offsets[i][j] + p.length))).toEqual(Buffer.from(p));
          });
        });
      }),
      fuzzParams(),
    );
  });

  it('reports malformed frames only as FrameError, through the error callback', () => {
    fuzz(
      fc.property(fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 6 }), fc.uint8Array({ maxLength: 60 }), (prefixes, body) => {
        // Length-prefixed bodies of arbitrary bytes, so that the reader sees whole (malformed) frames.
        const frames = [...prefixes, body].map((b) => Buffer.concat([Buffer.from(Uint32Array.of(b.length).buffer), b]));
        const errors: unknown[] = [];
        const reader = new FrameReader(
          () => undefined,
          (e) => errors.push(e),
        );
        for (const f of frames) reader.push(f);
        for (const e of errors) expect(e).toBeInstanceOf(FrameError);
      }),
      fuzzParams(),
    );
  });

  it('never throws on an arbitrary byte stream when an error callback is given', () => {
    fuzz(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const reader = new FrameReader(
          () => undefined,
          (e) => expect(e).toBeInstanceOf(FrameError),
        );
        reader.push(bytes);
      }),
      fuzzParams(),
    );
  });

  it('allocates for a body only as its bytes arrive, not what its length prefix claims', () => {
    fuzz(
      fc.property(fc.integer({ min: 2 ** 24, max: 2 ** 32 - 1 }), fc.uint8Array({ maxLength: 100 }), (claimed, bytes) => {
        const reader = new FrameReader(() => undefined, () => undefined);
        reader.push(Buffer.concat([Buffer.from(Uint32Array.of(claimed).buffer), bytes]));
        const held = (reader as unknown as { body: Uint8Array }).body;
        expect(held.byteLength).toBeLessThanOrEqual(1024 * 1024);
      }),
      fuzzParams(50),
    );
  });

  it('reassembles a body larger than the first buffer, grown as its chunks arrive', () => {
    const payload = Uint8Array.from({ length: 3 * 1024 * 1024 + 5 }, (_, i) => i % 251);
    const blob = new BlobBuilder();
    blob.add(payload);
    const stream = Buffer.concat(encodeFrame(2, [1], blob));
    const frames: Frame[] = [];
    const reader = new FrameReader((f) => frames.push(f));
    for (let pos = 0; pos < stream.length; pos += 65536) reader.push(stream.subarray(pos, pos + 65536));
    expect(frames).toHaveLength(1);
    expect(Buffer.from(frames[0].blob.subarray(0, payload.length)).equals(Buffer.from(payload))).toBe(true);
  });

  it('regression: short bodies, headers past the body and non-JSON headers are FrameErrors, not RangeError or SyntaxError', () => {
    const frame = (body: number[]) => Buffer.concat([Buffer.from(Uint32Array.of(body.length).buffer), Buffer.from(body)]);
    const cases = [frame([1, 0, 0]), frame([1, 0, 0, 0, 200, 0, 0, 0, 0x7b]), frame([1, 0, 0, 0, 1, 0, 0, 0, 0x7b])];
    for (const bytes of cases) {
      const errors: unknown[] = [];
      new FrameReader(() => undefined, (e) => errors.push(e)).push(bytes);
      expect(errors).toEqual([expect.any(FrameError)]);
      expect(() => new FrameReader(() => undefined).push(bytes)).toThrow(FrameError);
    }
    // The reader goes on with the next frame after a malformed one.
    const frames: Frame[] = [];
    const reader = new FrameReader((f) => frames.push(f), () => undefined);
    reader.push(Buffer.concat([cases[0], ...encodeFrame(7, { ok: true })]));
    expect(frames.map((f) => [f.type, f.header])).toEqual([[7, { ok: true }]]);
  });
});

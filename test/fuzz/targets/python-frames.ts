/**
 * The python backend's frame reader (libs/backends/src/python/frames.ts), fed a byte stream as the
 * stub's pipe delivers it. The input's first byte chooses the chunking (0: one push; n: pushes of n
 * bytes), the rest is the stream. Oracle: `push` never throws, malformed bodies reach the error
 * callback only as FrameError, frames carry a byte type and a blob inside their body, and the
 * reader holds no more than 1 MiB or twice the bytes it was given.
 */
import { BlobBuilder, encodeFrame, FrameError, FrameReader, MSG, type Frame } from '../../../libs/backends/src/python/frames';
import { check, fromRoot, type FuzzTarget } from '../target';

const u32 = (n: number) => new Uint8Array(Uint32Array.of(n).buffer);

function stream(chunking: number, frames: Uint8Array[][]): Uint8Array {
  return Buffer.concat([Uint8Array.of(chunking), ...frames.flat()]);
}

export const target: FuzzTarget = {
  coverage: [fromRoot('libs/backends/src/python/frames.ts')],
  maxLength: 4096,
  dictionary: [
    u32(0), u32(7), u32(8), u32(12), u32(0xffffffff), u32(0x7fffffff), u32(1 << 20), u32((1 << 20) + 1),
    ...Object.values(MSG).map((t) => Uint8Array.of(t, 0, 0, 0)),
    '[', ']', '{', '}', '"', ',', ':', 'null', '[[', '"x"', '\u0000', '\ud800',
  ],
  seeds() {
    const blob = new BlobBuilder();
    blob.add(Uint8Array.of(1, 2, 3, 4, 5));
    blob.add(new Uint8Array(Float32Array.of(1.5, -2).buffer));
    return [
      stream(0, [encodeFrame(MSG.READY, { pid: 1, version: 3 })]),
      stream(3, [encodeFrame(MSG.RESPONSE, [[['y', 'FP32', [2], 8, 8]], '{}'], blob), encodeFrame(MSG.LOG, { level: 'INFO', msg: 'x' })]),
      stream(1, [encodeFrame(MSG.EXECUTE_DONE, [0, [[[['o', 'BYTES', [1], 9, 0]]]]], blob)]),
      stream(0, [encodeFrame(MSG.RELEASE, ['/dev/shm/x'], undefined, Uint8Array.from(encodeFrame(MSG.RELEASE, [])[0]))]),
    ];
  },
  run(input) {
    const chunking = input.length > 0 ? input[0] : 0;
    const bytes = input.subarray(1);
    const frames: Frame[] = [];
    const reader = new FrameReader(
      (f) => frames.push(f),
      (e) => check(e instanceof FrameError, `the error callback got ${String(e)}`),
    );
    if (chunking === 0) reader.push(bytes);
    else for (let at = 0; at < bytes.length; at += chunking) reader.push(bytes.subarray(at, at + chunking));
    for (const f of frames) {
      check(Number.isInteger(f.type) && f.type >= 0 && f.type < 256, `frame type ${f.type}`);
      check(f.blob instanceof Uint8Array && f.blob.byteLength <= bytes.length, `a blob of ${f.blob.byteLength} bytes from ${bytes.length}`);
    }
    const held = (reader as unknown as { body?: Uint8Array }).body?.byteLength ?? 0;
    check(held <= Math.max(1 << 20, 2 * bytes.length), `the reader holds ${held} bytes after ${bytes.length}`);
  },
};

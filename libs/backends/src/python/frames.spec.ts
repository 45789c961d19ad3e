import { spawnSync } from 'node:child_process';
import { BlobBuilder, encodeFrame, FrameReader, MSG, type Frame } from './frames';
import { PYTHON_DIR } from './stub-process';

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

  it('puts a RELEASE frame in front of the next frame, in the same buffer', () => {
    const release = encodeFrame(MSG.RELEASE, ['/dev/shm/a'])[0];
    const chunks = encodeFrame(MSG.EXECUTE, [1, []], undefined, release);
    expect(chunks).toHaveLength(1);
    const frames: Frame[] = [];
    new FrameReader((f) => frames.push(f)).push(chunks[0]);
    expect(frames.map((f) => [f.type, f.header])).toEqual([[MSG.RELEASE, ['/dev/shm/a']], [MSG.EXECUTE, [1, []]]]);
  });
});

describe('the stub side of the framing', () => {
  it('reassembles frames however the stream is chunked, and consumes RELEASE frames', () => {
    const script = String.raw`
import os, socket, sys, threading
sys.path.insert(0, ${JSON.stringify(PYTHON_DIR)})
import _nereid_ipc as ipc

out_r, out_w = socket.socketpair()
sender = ipc.Connection(out_w.fileno(), "/nonexistent", "p-", 1 << 30)
frames = [(2, [1, "é"], b"abc"), (11, {"k": None}, b""), (3, [2], bytes(range(256)) * 300), (4, {"b": 1, "i": 0}, b"x" * 65500)]

def send_all():
    for i, (t, header, blob) in enumerate(frames):
        if i == 1:
            sender._done_with.append("/nonexistent/p-x")  # goes as a RELEASE frame before this one
        builder = sender.builder()
        if blob:
            builder.add("T", "UINT8", [len(blob)], blob)
        sender.send(t, header, builder)
    out_w.close()

threading.Thread(target=send_all).start()
stream = b""
while True:
    chunk = out_r.recv(1 << 20)
    if not chunk:
        break
    stream += chunk

for size in (1, 3, 7, 4096, 65536, 70000, len(stream)):
    in_r, in_w = socket.socketpair()
    def feed():
        for pos in range(0, len(stream), size):
            in_w.sendall(stream[pos:pos + size])
        in_w.close()
    threading.Thread(target=feed).start()
    receiver = ipc.Connection(in_r.fileno(), "/nonexistent", "p-", 1 << 30)
    got = []
    while True:
        frame = receiver.recv()
        if frame is None:
            break
        got.append((frame[0], frame[1], bytes(frame[2][:len(frame[2])])))
    expect = [(t, h, b + b"\0" * ((8 - len(b) % 8) % 8)) for t, h, b in frames]
    assert got == expect, (size, [g[:2] for g in got])
print("ok")
`;
    const r = spawnSync('python3', ['-c', script], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('ok');
  });
});

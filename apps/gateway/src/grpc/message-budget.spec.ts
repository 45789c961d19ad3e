import { releaseOf } from './message-budget';
import { MessageFraming } from './message-framing';

/** gRPC framing: flag byte, big-endian length, the message. */
function framed(...messages: Buffer[]): Buffer {
  return Buffer.concat(
    messages.flatMap((m) => {
      const prefix = Buffer.alloc(5);
      prefix.writeUInt32BE(m.length, 1);
      return [prefix, m];
    }),
  );
}

describe('MessageFraming', () => {
  it('announces each message length once its prefix is complete, however the frames split it', () => {
    const bytes = framed(Buffer.alloc(300, 1), Buffer.alloc(0), Buffer.alloc(70000, 2), Buffer.alloc(1, 3));
    for (const size of [1, 2, 3, 5, 7, 16384, bytes.length]) {
      const lengths: number[] = [];
      const framing = new MessageFraming((n) => lengths.push(n));
      for (let at = 0; at < bytes.length; at += size) framing.write(bytes.subarray(at, at + size));
      expect(lengths).toEqual([300, 0, 70000, 1]);
    }
  });

  it('announces a message before its bytes arrive', () => {
    const lengths: number[] = [];
    const framing = new MessageFraming((n) => lengths.push(n));
    const bytes = framed(Buffer.alloc(1 << 20));
    framing.write(bytes.subarray(0, 5));
    expect(lengths).toEqual([1 << 20]);
  });

  it('lets a thrown refusal stop the write (grpc-js answers RESOURCE_EXHAUSTED with its words)', () => {
    const framing = new MessageFraming(() => {
      throw new Error('no room');
    });
    expect(() => framing.write(framed(Buffer.alloc(10)))).toThrow('no room');
  });
});

describe('MessageFraming, compressed flag and arrival', () => {
  it('tells a compressed message from a plain one, and whether a message is under way', () => {
    const seen: [number, boolean][] = [];
    const framing = new MessageFraming((n, compressed) => seen.push([n, compressed]));
    const plain = framed(Buffer.alloc(10));
    const packed = framed(Buffer.alloc(20));
    packed[0] = 1;
    framing.write(plain);
    expect(framing.midMessage).toBe(false);
    framing.write(packed.subarray(0, 2));
    expect(framing.midMessage).toBe(true); // half a prefix
    framing.write(packed.subarray(2, 10));
    expect(framing.midMessage).toBe(true); // half a message
    framing.write(packed.subarray(10));
    expect(framing.midMessage).toBe(false);
    expect(seen).toEqual([
      [10, false],
      [20, true],
    ]);
    expect(framing.begun).toBe(2);
  });
});

describe('releaseOf', () => {
  it('is a no-op for a message that was not charged', () => {
    expect(() => releaseOf({})()).not.toThrow();
    expect(() => releaseOf(undefined)()).not.toThrow();
  });
});

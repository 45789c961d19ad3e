/**
 * Frames exchanged with the Python stub (mirrors libs/backends/python/_nereid_ipc.py, whose
 * docstring has the full protocol).
 *
 * A frame is `u32 LE body length` + body. The body is `u8 type, 3 pad bytes, u32 LE header length`,
 * a JSON header (metadata only), zero padding to an 8-byte boundary, then a blob of raw tensor bytes
 * that the header's tensor descriptors point into. Every received body gets its own ArrayBuffer at
 * offset 0, so 8-aligned blob offsets give aligned typed-array views without copying.
 *
 * The per-request frames (EXECUTE, EXECUTE_DONE, RESPONSE) have JSON arrays as headers, fields by
 * position (see python-instance.ts); tensor descriptors and response entries are positional too
 * (wire-tensors.ts, wire-responses.ts). The other frames have JSON objects. RELEASE frames (both
 * ways, header: a JSON array of paths) hand shared-memory files back to the side that owns them;
 * they are written together with the frame that follows them.
 */

export const MSG = {
  INIT: 1,
  EXECUTE: 2,
  BLS_RESULT: 3,
  CANCEL: 4,
  FINALIZE: 5,
  AUTOCOMPLETE: 6,
  READY: 10,
  EXECUTE_DONE: 11,
  RESPONSE: 12,
  BLS_REQUEST: 13,
  LOG: 14,
  FINALIZED: 15,
  AUTOCOMPLETE_DONE: 16,
  BLS_CANCEL: 17,
  RELEASE: 20,
} as const;

export type MessageType = (typeof MSG)[keyof typeof MSG];

/** A received frame: its type, parsed header (an array or an object, per type) and the blob its tensors point into. */
export interface Frame {
  type: number;
  header: unknown;
  blob: Uint8Array;
}

const PREFIX_BYTES = 12;
/** Blobs at least this large are written as separate chunks instead of being concatenated. */
const CONCAT_LIMIT = 64 * 1024;

function pad8(n: number): number {
  return (8 - (n % 8)) % 8;
}

/** PADS[n]: n zero bytes (shared: parts are only ever read). */
const PADS: readonly Uint8Array[] = Array.from({ length: 8 }, (_, n) => new Uint8Array(n));

/** Collects the payloads of one outgoing frame at 8-aligned offsets. */
export class BlobBuilder {
  readonly parts: Uint8Array[] = [];
  size = 0;

  /** Appends bytes; returns their offset in the blob. */
  add(bytes: Uint8Array): number {
    const offset = this.size;
    this.parts.push(bytes);
    const pad = pad8(bytes.byteLength);
    if (pad > 0) this.parts.push(PADS[pad]);
    this.size += bytes.byteLength + pad;
    return offset;
  }
}

/**
 * Encodes a frame as the chunks to write, in order: one buffer (prefix, header and a blob under
 * 64 KiB), then the parts of a larger blob. `before` (already encoded frames, e.g. a RELEASE) is
 * written at the start of the first buffer.
 */
export function encodeFrame(type: number, header: unknown, blob?: BlobBuilder, before?: Uint8Array): Uint8Array[] {
  const text = JSON.stringify(header);
  // One allocation for everything small: the header is encoded straight into the frame buffer.
  const headLen = Buffer.byteLength(text, 'utf8');
  const blobSize = blob?.size ?? 0;
  const inlineBlob = blob !== undefined && blobSize < CONCAT_LIMIT;
  const headPad = pad8(8 + headLen);
  const skip = before?.byteLength ?? 0;
  const first = Buffer.allocUnsafe(skip + PREFIX_BYTES + headLen + headPad + (inlineBlob ? blobSize : 0));
  if (before) first.set(before, 0);
  first.writeUInt32LE(8 + headLen + headPad + blobSize, skip);
  first.writeUInt32LE(type, skip + 4);
  first.writeUInt32LE(headLen, skip + 8);
  let pos = skip + PREFIX_BYTES + first.write(text, skip + PREFIX_BYTES, headLen, 'utf8');
  first.fill(0, pos, pos + headPad);
  pos += headPad;
  if (!blob || blobSize === 0) return [first];
  if (!inlineBlob) return [first, ...blob.parts];
  for (const part of blob.parts) {
    first.set(part, pos);
    pos += part.byteLength;
  }
  return [first];
}

/** Reassembles frames from a byte stream. */
export class FrameReader {
  private lenBuf = Buffer.alloc(4);
  private lenHave = 0;
  private body: Uint8Array | undefined;
  private bodyHave = 0;

  constructor(private readonly onFrame: (frame: Frame) => void) {}

  push(chunk: Uint8Array): void {
    let pos = 0;
    while (pos < chunk.byteLength) {
      if (this.body === undefined) {
        const take = Math.min(4 - this.lenHave, chunk.byteLength - pos);
        this.lenBuf.set(chunk.subarray(pos, pos + take), this.lenHave);
        this.lenHave += take;
        pos += take;
        if (this.lenHave < 4) return;
        this.body = new Uint8Array(this.lenBuf.readUInt32LE(0));
        this.bodyHave = 0;
        this.lenHave = 0;
      }
      const take = Math.min(this.body.byteLength - this.bodyHave, chunk.byteLength - pos);
      this.body.set(chunk.subarray(pos, pos + take), this.bodyHave);
      this.bodyHave += take;
      pos += take;
      if (this.bodyHave === this.body.byteLength) {
        const body = this.body;
        this.body = undefined;
        this.onFrame(decodeBody(body));
      }
    }
  }
}

function decodeBody(body: Uint8Array): Frame {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const type = view.getUint8(0);
  const headLen = view.getUint32(4, true);
  const headText = Buffer.from(body.buffer, body.byteOffset + 8, headLen).toString('utf8');
  const header = JSON.parse(headText) as unknown;
  const blobStart = 8 + headLen + pad8(8 + headLen);
  return { type, header, blob: body.subarray(blobStart) };
}

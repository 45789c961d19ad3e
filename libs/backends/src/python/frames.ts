/**
 * Frames exchanged with the Python stub (mirrors libs/backends/python/_nereid_ipc.py).
 *
 * A frame is `u32 LE body length` + body. The body is `u8 type, 3 pad bytes, u32 LE header length`,
 * a JSON header (metadata only), zero padding to an 8-byte boundary, then a blob of raw tensor bytes
 * that the header's tensor descriptors point into. Every received body gets its own ArrayBuffer at
 * offset 0, so 8-aligned blob offsets give aligned typed-array views without copying.
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
} as const;

export type MessageType = (typeof MSG)[keyof typeof MSG];

/** A received frame: its type, parsed header and the blob its tensors point into. */
export interface Frame {
  type: number;
  header: Record<string, unknown>;
  blob: Uint8Array;
}

const PREFIX_BYTES = 12;
/** Blobs at least this large are written as separate chunks instead of being concatenated. */
const CONCAT_LIMIT = 64 * 1024;

function pad8(n: number): number {
  return (8 - (n % 8)) % 8;
}

/** Collects the payloads of one outgoing frame at 8-aligned offsets. */
export class BlobBuilder {
  readonly parts: Uint8Array[] = [];
  size = 0;

  /** Appends bytes; returns their offset in the blob. */
  add(bytes: Uint8Array): number {
    const offset = this.size;
    this.parts.push(bytes);
    const pad = pad8(bytes.byteLength);
    if (pad > 0) this.parts.push(new Uint8Array(pad));
    this.size += bytes.byteLength + pad;
    return offset;
  }
}

/** Encodes a frame as the chunks to write, in order. */
export function encodeFrame(type: number, header: object, blob?: BlobBuilder): Uint8Array[] {
  const head = Buffer.from(JSON.stringify(header), 'utf8');
  const headPad = pad8(8 + head.byteLength);
  const blobSize = blob?.size ?? 0;
  const bodyLen = 8 + head.byteLength + headPad + blobSize;
  const inlineBlob = blob !== undefined && blobSize < CONCAT_LIMIT;
  const first = Buffer.allocUnsafe(PREFIX_BYTES + head.byteLength + headPad + (inlineBlob ? blobSize : 0));
  first.writeUInt32LE(bodyLen, 0);
  first.writeUInt32LE(type, 4);
  first.writeUInt32LE(head.byteLength, 8);
  head.copy(first, PREFIX_BYTES);
  let pos = PREFIX_BYTES + head.byteLength;
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
  const header = JSON.parse(headText) as Record<string, unknown>;
  const blobStart = 8 + headLen + pad8(8 + headLen);
  return { type, header, blob: body.subarray(blobStart) };
}

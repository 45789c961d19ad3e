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
  /** Custom metrics (pb_utils.MetricFamily): stub -> server, answered by METRIC_RESULT where awaited. */
  METRIC_REQUEST: 40,
  METRIC_RESULT: 41,
  /** Stub -> server: `pb_utils.load_model` / `unload_model` / `is_model_ready` (model-control-bridge.ts). */
  MODEL_CONTROL: 30,
  /** Server -> stub: its answer. */
  MODEL_CONTROL_RESULT: 31,
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
/**
 * A received body's first buffer is at most this large and doubles as bytes arrive: a length prefix
 * alone (up to 4 GiB) allocates no more than this, and memory stays within twice the bytes received.
 */
const FIRST_BODY_BYTES = 1024 * 1024;
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

/** A frame body that is not a frame: shorter than its fixed part, a header past its end, or a header that is not JSON. */
export class FrameError extends Error {
  override readonly name = 'FrameError';
}

/**
 * Reassembles frames from a byte stream. A malformed body is reported to `onError` as a FrameError
 * (thrown from `push` when there is no `onError`); the reader then goes on with the next frame.
 */
export class FrameReader {
  private lenBuf = Buffer.alloc(4);
  private lenHave = 0;
  private body: Uint8Array | undefined;
  private bodyHave = 0;
  /** The length the prefix announced; `body` grows towards it as bytes arrive (its capacity never exceeds it). */
  private bodyLength = 0;

  constructor(
    private readonly onFrame: (frame: Frame) => void,
    private readonly onError?: (error: FrameError) => void,
  ) {}

  push(chunk: Uint8Array): void {
    let pos = 0;
    while (pos < chunk.byteLength) {
      if (this.body === undefined) {
        const take = Math.min(4 - this.lenHave, chunk.byteLength - pos);
        this.lenBuf.set(chunk.subarray(pos, pos + take), this.lenHave);
        this.lenHave += take;
        pos += take;
        if (this.lenHave < 4) return;
        this.bodyLength = this.lenBuf.readUInt32LE(0);
        this.body = new Uint8Array(Math.min(this.bodyLength, FIRST_BODY_BYTES));
        this.bodyHave = 0;
        this.lenHave = 0;
      }
      const take = Math.min(this.bodyLength - this.bodyHave, chunk.byteLength - pos);
      if (this.bodyHave + take > this.body.byteLength) this.grow(this.bodyHave + take);
      this.body.set(chunk.subarray(pos, pos + take), this.bodyHave);
      this.bodyHave += take;
      pos += take;
      if (this.bodyHave === this.bodyLength) {
        const body = this.body;
        this.body = undefined;
        const frame = this.decode(body);
        if (frame) this.onFrame(frame);
      }
    }
  }

  /** Doubles the body buffer (at least to `needed`, at most to the announced length) and copies what arrived. */
  private grow(needed: number): void {
    const body = this.body as Uint8Array;
    const grown = new Uint8Array(Math.min(this.bodyLength, Math.max(needed, body.byteLength * 2)));
    grown.set(body.subarray(0, this.bodyHave));
    this.body = grown;
  }

  private decode(body: Uint8Array): Frame | undefined {
    try {
      return decodeBody(body);
    } catch (e) {
      if (!(e instanceof FrameError) || !this.onError) throw e;
      this.onError(e);
      return undefined;
    }
  }
}

function decodeBody(body: Uint8Array): Frame {
  if (body.byteLength < 8) throw new FrameError(`frame body of ${body.byteLength} bytes, shorter than its 8-byte prefix`);
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const type = view.getUint8(0);
  const headLen = view.getUint32(4, true);
  if (headLen > body.byteLength - 8) {
    throw new FrameError(`frame header of ${headLen} bytes past the end of a ${body.byteLength}-byte body`);
  }
  const headText = Buffer.from(body.buffer, body.byteOffset + 8, headLen).toString('utf8');
  let header: unknown;
  try {
    header = JSON.parse(headText) as unknown;
  } catch (e) {
    throw new FrameError(`frame header is not JSON: ${(e as Error).message}`);
  }
  const blobStart = 8 + headLen + pad8(8 + headLen);
  return { type, header, blob: body.subarray(blobStart) };
}

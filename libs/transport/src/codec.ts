import type { Parameters } from '@nereid/protocol';
import {
  ELEMENT_SIZE, elementCount, isBytesData, isDataType, tensorDataToBytes, viewAs,
  type NumericDataType, type NumericTensorData, type Tensor,
} from '@nereid/tensor';
import type { TransportMessage, WireRequest, WireResponse } from './messages';
import { LOG_ID_MAX, MESSAGE_KINDS } from './messages';
import { TransportErrors } from './transport-errors';

/**
 * The binary form of a TransportMessage, for adapters that cross a process boundary:
 *
 *   "NRM1" | u32 header length | u32 frame count | frame count × u64 frame length
 *   | header (UTF-8 JSON) | padding to 8 | frame 0 | padding to 8 | frame 1 | ...
 *
 * The header is the message with each tensor replaced by `{name, datatype, shape, frame}`; the
 * tensor's bytes are its frame, raw little-endian (never JSON numbers). A BYTES tensor's frame is
 * its elements, each a u32 length then the bytes. Frames start on 8-byte boundaries so that the
 * decoder views them in place when the buffer itself is aligned. bigint values (parameters,
 * correlation ids) are `{"$bigint": "<decimal>"}` in the header.
 *
 * The decoder trusts nothing: every length is checked against the bytes that are there before
 * anything is sized from it, so a corrupt message costs an error, never a huge allocation.
 */

const MAGIC = 0x314d524e; // "NRM1" read as a little-endian u32
const FIXED = 12;
const ALIGN = 8;
/** A misaligned message up to this size is copied whole into an aligned buffer before it is decoded. */
const REALIGN_MAX = 64 * 1024;

interface TensorRef {
  name: string;
  datatype: string;
  shape: number[];
  frame: number;
}

const pad = (n: number): number => (n + ALIGN - 1) & ~(ALIGN - 1);

/**
 * Encodes a message into one Buffer: one allocation, the header's text written into it in place
 * (no intermediate Buffer), the frames copied once.
 */
export function encodeMessage(message: TransportMessage): Buffer {
  const frames: Uint8Array[] = [];
  const header = JSON.stringify(toWire(message, frames));
  const headerLength = Buffer.byteLength(header, 'utf8');
  const headerAt = FIXED + frames.length * 8;
  let total = pad(headerAt + headerLength);
  for (const f of frames) total += pad(f.byteLength);
  const out = Buffer.allocUnsafe(total);
  out.writeUInt32LE(MAGIC, 0);
  out.writeUInt32LE(headerLength, 4);
  out.writeUInt32LE(frames.length, 8);
  let at = FIXED;
  for (const f of frames) {
    // A u64 length: frames are under 2^48 bytes (the decoder checks the high half).
    out.writeUInt32LE(f.byteLength % 0x1_0000_0000, at);
    out.writeUInt32LE(Math.floor(f.byteLength / 0x1_0000_0000), at + 4);
    at += 8;
  }
  at += out.write(header, at, headerLength, 'utf8');
  for (const f of frames) {
    at = zeroTo(out, at, pad(at));
    out.set(f, at);
    at += f.byteLength;
  }
  zeroTo(out, at, total);
  return out;
}

/** Zeroes `out` from `at` to `end` (padding: a few bytes, never the allocator's old contents); returns `end`. */
function zeroTo(out: Buffer, at: number, end: number): number {
  while (at < end) out[at++] = 0;
  return end;
}

/** Decodes what `encodeMessage` made; throws an INTERNAL InferenceError on anything malformed. */
export function decodeMessage(input: Uint8Array): TransportMessage {
  // Redis hands each message over as a slice at any offset of what the socket read: a small one is
  // moved to an 8-aligned copy once (Node's Buffer pool is 8-aligned), so that its tensors are views
  // of it, not each a copy in an ArrayBuffer of its own. A large one's misaligned tensors are
  // copied one by one (viewAs): a message of one large UINT8 or BYTES tensor needs none.
  const buf = input.byteOffset % ALIGN !== 0 && input.byteLength <= REALIGN_MAX ? Buffer.from(input) : input;
  if (buf.byteLength < FIXED) throw TransportErrors.badMessage(`${buf.byteLength} bytes is shorter than the ${FIXED}-byte prefix`);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  if (view.getUint32(0, true) !== MAGIC) throw TransportErrors.badMessage('wrong magic number');
  const headerLength = view.getUint32(4, true);
  const frameCount = view.getUint32(8, true);
  let at = FIXED;
  if (frameCount * 8 > buf.byteLength - at) throw TransportErrors.badMessage(`${frameCount} frames do not fit in ${buf.byteLength} bytes`);
  const lengths: number[] = [];
  for (let i = 0; i < frameCount; i++) {
    const lo = view.getUint32(at, true);
    const hi = view.getUint32(at + 4, true);
    if (hi > 0xffff) throw TransportErrors.badMessage(`frame ${i} length is out of range`);
    lengths.push(hi * 0x1_0000_0000 + lo);
    at += 8;
  }
  if (headerLength > buf.byteLength - at) throw TransportErrors.badMessage(`header of ${headerLength} bytes runs past the end`);
  const headerText = Buffer.isBuffer(buf)
    ? buf.toString('utf8', at, at + headerLength)
    : Buffer.from(buf.buffer, buf.byteOffset + at, headerLength).toString('utf8');
  at += headerLength;
  const frames: Uint8Array[] = [];
  for (let i = 0; i < frameCount; i++) {
    at = pad(at);
    if (lengths[i] > buf.byteLength - at) throw TransportErrors.badMessage(`frame ${i} of ${lengths[i]} bytes runs past the end`);
    frames.push(buf.subarray(at, at + lengths[i]));
    at += lengths[i];
  }
  let body: unknown;
  try {
    body = JSON.parse(headerText);
  } catch (e) {
    throw TransportErrors.badMessage(`header is not JSON (${(e as Error).message})`);
  }
  return fromWire(body, frames);
}

// ---- encoding -------------------------------------------------------------------------------

function toWire(m: TransportMessage, frames: Uint8Array[]): unknown {
  switch (m.kind) {
    case 'execute-batch':
      return {
        ...m,
        requests: m.requests.map((r) => requestToWire(r, frames)),
        more: m.more?.map((b) => ({ ...b, requests: b.requests.map((r) => requestToWire(r, frames)) })),
      };
    case 'response':
      return m.response === undefined ? m : { ...m, response: responseToWire(m.response, frames) };
    default:
      return m;
  }
}

function requestToWire(r: WireRequest, frames: Uint8Array[]): unknown {
  return {
    ...r,
    inputs: r.inputs.map((t) => tensorRef(t, frames)),
    parameters: paramsToWire(r.parameters),
    correlationId: typeof r.correlationId === 'bigint' ? { $bigint: r.correlationId.toString() } : r.correlationId,
    outputs: r.outputs?.map((o) => (o.parameters ? { ...o, parameters: paramsToWire(o.parameters) } : o)),
  };
}

function responseToWire(r: WireResponse, frames: Uint8Array[]): unknown {
  return {
    ...r,
    outputs: r.outputs.map((t) => tensorRef(t, frames)),
    parameters: r.parameters && paramsToWire(r.parameters),
  };
}

/** The parameters as the header carries them: themselves when no value is a bigint (the common case). */
function paramsToWire(p: Parameters): Parameters | Record<string, unknown> {
  const keys = Object.keys(p);
  if (!keys.some((k) => typeof p[k] === 'bigint')) return p;
  // No prototype: a parameter named `__proto__` stays a plain entry.
  const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const k of keys) {
    const v = p[k];
    out[k] = typeof v === 'bigint' ? { $bigint: v.toString() } : v;
  }
  return out;
}

function tensorRef(t: Tensor, frames: Uint8Array[]): TensorRef {
  const frame = frames.length;
  if (isBytesData(t.data)) {
    for (const e of t.data) {
      if (e.byteLength > 0xffffffff) throw TransportErrors.unencodable(`element of '${t.name}' is over 4 GiB`);
    }
  }
  // The tensor library's wire form: a view for fixed-width data, BYTES with u32 length prefixes.
  frames.push(tensorDataToBytes(t));
  return { name: t.name, datatype: t.datatype, shape: t.shape, frame };
}

// ---- decoding -------------------------------------------------------------------------------

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function need<T>(ok: boolean, value: T, what: string): T {
  if (!ok) throw TransportErrors.badMessage(what);
  return value;
}

/**
 * The message from its parsed header, converted in place: the header's objects are fresh from
 * JSON.parse and nobody else's, so tensors, bigints and parameters replace their wire forms where
 * they are instead of being copied into new objects.
 */
function fromWire(body: unknown, frames: Uint8Array[]): TransportMessage {
  if (!isObj(body)) throw TransportErrors.badMessage('header is not an object');
  const kind = body.kind;
  if (typeof kind !== 'string' || !(MESSAGE_KINDS as readonly string[]).includes(kind)) {
    throw TransportErrors.badMessage(`unknown kind ${JSON.stringify(kind)?.slice(0, 40)}`);
  }
  const used = new Uint8Array(frames.length);
  switch (kind) {
    case 'execute-batch':
      batchFromWire(body, frames, used);
      if (Array.isArray(body.more)) {
        for (const b of body.more as unknown[]) {
          if (!isObj(b) || b.more !== undefined) throw TransportErrors.badMessage("an execute-batch's 'more' holds something else than batches");
          batchFromWire(b, frames, used);
        }
      } else if (body.more !== undefined) {
        throw TransportErrors.badMessage("an execute-batch's 'more' is not a list");
      }
      return body as unknown as TransportMessage;
    case 'response':
      if (body.response !== undefined) body.response = responseFromWire(body.response, frames, used);
      return body as unknown as TransportMessage;
    case 'batch-done':
      // The scheduler ends each batch listed: one without an id would stop it short of the rest.
      if (body.more !== undefined && !(Array.isArray(body.more) && body.more.every((r) => isObj(r) && typeof r.batchId === 'string'))) {
        throw TransportErrors.badMessage("a batch-done's 'more' is not a list of batch reports");
      }
      return body as unknown as TransportMessage;
    default:
      return body as unknown as TransportMessage;
  }
}

function batchFromWire(b: Obj, frames: Uint8Array[], used: Uint8Array): void {
  const requests = need(Array.isArray(b.requests), b.requests as unknown[], 'execute-batch without requests');
  for (let i = 0; i < requests.length; i++) requests[i] = requestFromWire(requests[i], frames, used);
}

function requestFromWire(r: unknown, frames: Uint8Array[], used: Uint8Array): WireRequest {
  if (!isObj(r)) throw TransportErrors.badMessage('a request is not an object');
  if (r.logId !== undefined && (typeof r.logId !== 'string' || r.logId.length > LOG_ID_MAX)) {
    throw TransportErrors.badMessage(`a request's logId is not a string of at most ${LOG_ID_MAX} characters`);
  }
  const inputs = need(Array.isArray(r.inputs), r.inputs as unknown[], 'a request without inputs');
  for (let i = 0; i < inputs.length; i++) inputs[i] = tensorFromRef(inputs[i], frames, used);
  r.parameters = paramsFromWire(r.parameters);
  if (isObj(r.correlationId)) r.correlationId = bigintFrom(r.correlationId);
  if (Array.isArray(r.outputs)) {
    for (const o of r.outputs as unknown[]) if (isObj(o) && o.parameters !== undefined) o.parameters = paramsFromWire(o.parameters);
  } else if ('outputs' in r) {
    delete r.outputs;
  }
  return r as unknown as WireRequest;
}

function responseFromWire(r: unknown, frames: Uint8Array[], used: Uint8Array): WireResponse {
  if (!isObj(r)) throw TransportErrors.badMessage('a response is not an object');
  const outputs = need(Array.isArray(r.outputs), r.outputs as unknown[], 'a response without outputs');
  for (let i = 0; i < outputs.length; i++) outputs[i] = tensorFromRef(outputs[i], frames, used);
  if (r.parameters !== undefined) r.parameters = paramsFromWire(r.parameters);
  return r as unknown as WireResponse;
}

/** Checks each value and turns `{$bigint}` ones back into bigints, in place (JSON.parse made every key an own property, `__proto__` too). */
function paramsFromWire(p: unknown): Parameters {
  if (!isObj(p)) throw TransportErrors.badMessage('parameters are not an object');
  for (const k of Object.keys(p)) {
    const v = p[k];
    if (isObj(v)) p[k] = bigintFrom(v);
    else if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') {
      throw TransportErrors.badMessage(`parameter '${k.slice(0, 40)}' has no valid value`);
    }
  }
  return p as Parameters;
}

function bigintFrom(v: Obj): bigint {
  const s = v.$bigint;
  if (typeof s !== 'string' || !/^-?\d{1,40}$/.test(s)) throw TransportErrors.badMessage('bad $bigint value');
  return BigInt(s);
}

function tensorFromRef(ref: unknown, frames: Uint8Array[], used: Uint8Array): Tensor {
  if (!isObj(ref)) throw TransportErrors.badMessage('a tensor is not an object');
  const { name, datatype, shape, frame } = ref;
  if (typeof name !== 'string') throw TransportErrors.badMessage('a tensor without a name');
  if (typeof datatype !== 'string' || !isDataType(datatype)) throw TransportErrors.badMessage(`tensor '${name.slice(0, 40)}' has an unknown datatype`);
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw TransportErrors.badMessage(`tensor '${name.slice(0, 40)}' has a bad shape`);
  }
  if (typeof frame !== 'number' || !Number.isInteger(frame) || frame < 0 || frame >= frames.length || used[frame] === 1) {
    throw TransportErrors.badMessage(`tensor '${name.slice(0, 40)}' names a missing or reused frame`);
  }
  used[frame] = 1;
  const bytes = frames[frame];
  const count = elementCount(shape as number[]);
  if (datatype === 'BYTES') {
    const elements = bytesElements(bytes, count, name);
    return { name, datatype, shape: shape as number[], data: elements };
  }
  const size = ELEMENT_SIZE[datatype];
  if (count * size !== bytes.byteLength) {
    throw TransportErrors.badMessage(`tensor '${name.slice(0, 40)}' has ${bytes.byteLength} bytes, its shape needs ${count * size}`);
  }
  const data: NumericTensorData = viewAs(datatype as NumericDataType, bytes);
  return { name, datatype, shape: shape as number[], data };
}

/** A BYTES frame's elements, as views; the count must match the shape. */
function bytesElements(bytes: Uint8Array, count: number, name: string): Uint8Array[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Uint8Array[] = [];
  let at = 0;
  while (at < bytes.byteLength) {
    if (out.length >= count) break;
    if (bytes.byteLength - at < 4) throw TransportErrors.badMessage(`BYTES tensor '${name.slice(0, 40)}' has a truncated length`);
    const n = view.getUint32(at, true);
    at += 4;
    if (n > bytes.byteLength - at) throw TransportErrors.badMessage(`BYTES element of tensor '${name.slice(0, 40)}' runs past its frame`);
    out.push(bytes.subarray(at, at + n));
    at += n;
  }
  if (out.length !== count || at !== bytes.byteLength) {
    throw TransportErrors.badMessage(`BYTES tensor '${name.slice(0, 40)}' does not hold the ${count} elements of its shape`);
  }
  return out;
}

import type { Parameters, ParameterValue } from '@nereid/protocol';
import {
  ELEMENT_SIZE, elementCount, isBytesData, isDataType, tensorDataToBytes, viewAs,
  type NumericDataType, type NumericTensorData, type Tensor,
} from '@nereid/tensor';
import type { TransportMessage, WireRequest, WireResponse } from './messages';
import { MESSAGE_KINDS } from './messages';
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

interface TensorRef {
  name: string;
  datatype: string;
  shape: number[];
  frame: number;
}

const pad = (n: number): number => (n + ALIGN - 1) & ~(ALIGN - 1);

/** Encodes a message into one Buffer. */
export function encodeMessage(message: TransportMessage): Buffer {
  const frames: Uint8Array[] = [];
  const body = toWire(message, frames);
  const header = Buffer.from(JSON.stringify(body), 'utf8');
  let total = pad(FIXED + frames.length * 8 + header.length);
  for (const f of frames) total += pad(f.byteLength);
  const out = Buffer.allocUnsafe(total);
  out.writeUInt32LE(MAGIC, 0);
  out.writeUInt32LE(header.length, 4);
  out.writeUInt32LE(frames.length, 8);
  let at = FIXED;
  for (const f of frames) {
    out.writeUIntLE(f.byteLength, at, 6);
    out.writeUInt16LE(0, at + 6);
    at += 8;
  }
  header.copy(out, at);
  at += header.length;
  for (const f of frames) {
    const start = pad(at);
    out.fill(0, at, start);
    out.set(f, start);
    at = start + f.byteLength;
  }
  out.fill(0, at, total);
  return out;
}

/** Decodes what `encodeMessage` made; throws an INTERNAL InferenceError on anything malformed. */
export function decodeMessage(buf: Uint8Array): TransportMessage {
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
  const headerText = Buffer.from(buf.buffer, buf.byteOffset + at, headerLength).toString('utf8');
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
      return { ...m, requests: m.requests.map((r) => requestToWire(r, frames)) };
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

function paramsToWire(p: Parameters): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(p)) out[k] = typeof v === 'bigint' ? { $bigint: v.toString() } : v;
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

function fromWire(body: unknown, frames: Uint8Array[]): TransportMessage {
  if (!isObj(body)) throw TransportErrors.badMessage('header is not an object');
  const kind = body.kind;
  if (typeof kind !== 'string' || !(MESSAGE_KINDS as readonly string[]).includes(kind)) {
    throw TransportErrors.badMessage(`unknown kind ${JSON.stringify(kind)?.slice(0, 40)}`);
  }
  const used = new Set<number>();
  switch (kind) {
    case 'execute-batch': {
      const requests = need(Array.isArray(body.requests), body.requests as unknown[], 'execute-batch without requests');
      return { ...body, requests: requests.map((r) => requestFromWire(r, frames, used)) } as TransportMessage;
    }
    case 'response':
      if (body.response === undefined) return body as unknown as TransportMessage;
      return { ...body, response: responseFromWire(body.response, frames, used) } as TransportMessage;
    default:
      return body as unknown as TransportMessage;
  }
}

function requestFromWire(r: unknown, frames: Uint8Array[], used: Set<number>): WireRequest {
  if (!isObj(r)) throw TransportErrors.badMessage('a request is not an object');
  const inputs = need(Array.isArray(r.inputs), r.inputs as unknown[], 'a request without inputs');
  const out = {
    ...r,
    inputs: inputs.map((t) => tensorFromRef(t, frames, used)),
    parameters: paramsFromWire(r.parameters),
    correlationId: isObj(r.correlationId) ? bigintFrom(r.correlationId) : r.correlationId,
  } as Obj;
  if (Array.isArray(r.outputs)) {
    out.outputs = r.outputs.map((o: unknown) => (isObj(o) && o.parameters !== undefined ? { ...o, parameters: paramsFromWire(o.parameters) } : o));
  } else {
    delete out.outputs;
  }
  return out as unknown as WireRequest;
}

function responseFromWire(r: unknown, frames: Uint8Array[], used: Set<number>): WireResponse {
  if (!isObj(r)) throw TransportErrors.badMessage('a response is not an object');
  const outputs = need(Array.isArray(r.outputs), r.outputs as unknown[], 'a response without outputs');
  const out: Obj = { ...r, outputs: outputs.map((t) => tensorFromRef(t, frames, used)) };
  if (r.parameters !== undefined) out.parameters = paramsFromWire(r.parameters);
  else delete out.parameters;
  return out as unknown as WireResponse;
}

function paramsFromWire(p: unknown): Parameters {
  if (!isObj(p)) throw TransportErrors.badMessage('parameters are not an object');
  const out: Parameters = {};
  for (const [k, v] of Object.entries(p)) {
    let value: ParameterValue;
    if (isObj(v)) value = bigintFrom(v);
    else if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') value = v;
    else throw TransportErrors.badMessage(`parameter '${k.slice(0, 40)}' has no valid value`);
    out[k] = value;
  }
  return out;
}

function bigintFrom(v: Obj): bigint {
  const s = v.$bigint;
  if (typeof s !== 'string' || !/^-?\d{1,40}$/.test(s)) throw TransportErrors.badMessage('bad $bigint value');
  return BigInt(s);
}

function tensorFromRef(ref: unknown, frames: Uint8Array[], used: Set<number>): Tensor {
  if (!isObj(ref)) throw TransportErrors.badMessage('a tensor is not an object');
  const { name, datatype, shape, frame } = ref;
  if (typeof name !== 'string') throw TransportErrors.badMessage('a tensor without a name');
  if (typeof datatype !== 'string' || !isDataType(datatype)) throw TransportErrors.badMessage(`tensor '${name.slice(0, 40)}' has an unknown datatype`);
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw TransportErrors.badMessage(`tensor '${name.slice(0, 40)}' has a bad shape`);
  }
  if (typeof frame !== 'number' || !Number.isInteger(frame) || frame < 0 || frame >= frames.length || used.has(frame)) {
    throw TransportErrors.badMessage(`tensor '${name.slice(0, 40)}' names a missing or reused frame`);
  }
  used.add(frame);
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

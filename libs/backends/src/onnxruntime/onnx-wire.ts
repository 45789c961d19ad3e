/**
 * The protobuf wire format, as far as reading ONNX files needs it: a message split into its fields
 * as spans of the buffer (varint, fixed64, length-delimited and fixed32 fields; groups rejected).
 * Errors are plain Errors naming the ONNX model as malformed.
 */

/** One field of a message, as positions in its buffer. */
export interface WireField {
  no: number;
  wire: number;
  /** The whole field, tag included. */
  start: number;
  end: number;
  /** Where the payload starts (after the length of a length-delimited field). */
  payloadStart: number;
  /** The value of a varint field (wire type 0), unsigned. */
  varint?: number;
}

/** The fields of the message `buf`, in order. */
export function wireFields(buf: Uint8Array): WireField[] {
  const out: WireField[] = [];
  const pos = { at: 0 };
  while (pos.at < buf.length) {
    const start = pos.at;
    const tag = readVarint(buf, pos);
    const no = Math.floor(tag / 8);
    const wire = tag % 8;
    let payloadStart = pos.at;
    let varint: number | undefined;
    switch (wire) {
      case 0:
        varint = readVarint(buf, pos);
        break;
      case 1:
        pos.at += 8;
        break;
      case 2: {
        const length = readVarint(buf, pos);
        payloadStart = pos.at;
        pos.at += length;
        break;
      }
      case 5:
        pos.at += 4;
        break;
      default:
        throw new Error(`malformed ONNX model: unsupported wire type ${wire}`);
    }
    if (pos.at > buf.length) throw new Error('malformed ONNX model: truncated field');
    out.push({ no, wire, start, end: pos.at, payloadStart, varint });
  }
  return out;
}

/** Reads an unsigned varint (up to 10 bytes) at `pos`, moving `pos` past it. */
export function readVarint(buf: Uint8Array, pos: { at: number }): number {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    if (pos.at >= buf.length) throw new Error('malformed ONNX model: truncated varint');
    const b = buf[pos.at++];
    value += (b & 0x7f) * scale;
    if (b < 0x80) return value;
    scale *= 128;
  }
  throw new Error('malformed ONNX model: varint too long');
}

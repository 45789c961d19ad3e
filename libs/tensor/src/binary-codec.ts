import { CoreRequestErrors as Errors } from './errors';
import { ELEMENT_SIZE, type DataType } from './datatype';
import { BYTES_LENGTH_PREFIX, checkedElementCount, type Tensor, type TensorData } from './tensor';
import { bytesView, EMPTY_BYTES_ELEMENT, isBytesData, viewAs } from './typed';

/**
 * The memory one decoded BYTES element takes beyond its contents, as the front doors count it
 * against their input limits (issue 16): a non-empty element is a Uint8Array view (of the body, or
 * of one buffer for a JSON request's strings) and its array slot, ~104 bytes of heap measured on
 * Node 20 (~120-140 of RSS); a JSON request's string before it adds ~24. An empty element shares
 * one array (EMPTY_BYTES_ELEMENT) but still takes its slot: counted the same, so that a count from
 * the shape bounds the cost before anything is decoded.
 */
export const BYTES_ELEMENT_COST = 128;

/**
 * Raw tensor bytes (binary section of an HTTP body, gRPC `raw_input_contents`, shared memory) →
 * TensorData. Fixed-width types become typed-array views over `bytes` (no copy) when aligned;
 * BYTES elements become views of their payloads.
 */
export function tensorDataFromBytes(
  datatype: DataType,
  shape: number[],
  bytes: Uint8Array,
  name: string,
  model: string,
): TensorData {
  // A BYTES element takes at least its 4-byte length prefix.
  const count = checkedElementCount(shape, ELEMENT_SIZE[datatype] || BYTES_LENGTH_PREFIX, name, model);
  if (datatype === 'BYTES') return parseBytesElements(bytes, count, name, model);
  const expected = count * ELEMENT_SIZE[datatype];
  if (bytes.byteLength !== expected) {
    throw Errors.byteSizeMismatch(name, model, expected, bytes.byteLength);
  }
  return viewAs(datatype, bytes);
}

/** Splits length-prefixed BYTES elements; the element count must match the shape exactly. */
function parseBytesElements(bytes: Uint8Array, count: number, name: string, model: string): Uint8Array[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Uint8Array[] = [];
  let offset = 0;
  while (offset < bytes.byteLength) {
    if (out.length === count) {
      throw Errors.stringElementsBeyond(name, model, count + 1, count);
    }
    if (offset + BYTES_LENGTH_PREFIX > bytes.byteLength) {
      throw Errors.incompleteLengthIndicator(name, model, bytes.byteLength - offset);
    }
    const length = view.getUint32(offset, true);
    offset += BYTES_LENGTH_PREFIX;
    if (offset + length > bytes.byteLength) {
      throw Errors.stringElementBeyondData(name, model, out.length, length, bytes.byteLength - offset);
    }
    // Empty elements share one array: a view costs ~120 bytes of memory for 4 bytes on the wire.
    out.push(length === 0 ? EMPTY_BYTES_ELEMENT : bytes.subarray(offset, offset + length));
    offset += length;
  }
  if (out.length !== count) {
    throw Errors.stringElementCount(count, name, model, out.length);
  }
  return out;
}

/** TensorData → raw wire bytes: a view for fixed-width data; BYTES serialized with LE length prefixes. */
export function tensorDataToBytes(tensor: Tensor): Uint8Array {
  const { data } = tensor;
  if (!isBytesData(data)) return bytesView(data);
  return serializeBytesElements(data);
}

export function serializeBytesElements(elements: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(bytesElementsSize(elements));
  const view = new DataView(out.buffer);
  let offset = 0;
  for (const e of elements) {
    view.setUint32(offset, e.byteLength, true);
    out.set(e, offset + BYTES_LENGTH_PREFIX);
    offset += BYTES_LENGTH_PREFIX + e.byteLength;
  }
  return out;
}

function bytesElementsSize(elements: readonly Uint8Array[]): number {
  let size = 0;
  for (const e of elements) size += BYTES_LENGTH_PREFIX + e.byteLength;
  return size;
}

/** Wire byte size of a tensor's data (what `binary_data_size` announces). */
export function byteSizeOf(tensor: Tensor): number {
  const { data } = tensor;
  return isBytesData(data) ? bytesElementsSize(data) : data.byteLength;
}

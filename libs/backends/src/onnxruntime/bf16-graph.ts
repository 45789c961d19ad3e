/**
 * onnxruntime-node has no bfloat16 tensor type: it cannot open a model whose graph inputs or
 * outputs are BF16 ("Unsupported data type: 16"), nor pass BF16 data either way. Such a model is
 * opened with its graph rewritten: every BF16 graph input X becomes a FLOAT input (named
 * `aliasOf(X)`) followed by `Cast(to=BFLOAT16)` into X, and every BF16 graph output Y is followed
 * by `Cast(to=FLOAT)` into a FLOAT output `aliasOf(Y)`. BF16 → FLOAT is exact (BF16 is the upper
 * half of a float32) and FLOAT → BF16 of such a value is exact too, except that ORT's cast keeps
 * only the sign of a NaN (its payload becomes the quiet NaN's). The graph inside is unchanged.
 *
 * The rewrite works on the protobuf wire format (field numbers of onnx.proto: ModelProto.graph = 7;
 * GraphProto.node = 1, input = 11, output = 12; ValueInfoProto.name = 1, type = 2;
 * TypeProto.tensor_type = 1; Tensor.elem_type = 1, shape = 2; NodeProto.input = 1, output = 2,
 * name = 3, op_type = 4, attribute = 5; AttributeProto.name = 1, i = 3, type = 20): every other
 * field, weights included, is copied as it is.
 */

/** TensorProto.DataType numbers used here. */
export const ONNX_FLOAT = 1;
export const ONNX_BFLOAT16 = 16;

/** AttributeProto.AttributeType INT. */
const ATTRIBUTE_INT = 2;

/** The FLOAT graph input/output standing for BF16 tensor `name`. */
export function aliasOf(name: string): string {
  return `${name}__nereid_bf16_as_fp32`;
}

interface Span {
  no: number;
  wire: number;
  /** The whole field, tag included. */
  start: number;
  end: number;
  /** Payload of a length-delimited field. */
  payloadStart: number;
}

/**
 * `model` (ONNX ModelProto bytes) with the named BF16 graph inputs and outputs carried as FLOAT
 * through Cast nodes (see above). Throws a plain Error when the model is malformed or a named
 * tensor is not a graph input/output.
 */
export function wrapBf16Io(model: Uint8Array, inputs: readonly string[], outputs: readonly string[]): Uint8Array {
  const top = spans(model);
  const graphSpan = top.find((s) => s.no === 7 && s.wire === 2);
  if (!graphSpan) throw new Error('not an ONNX model: no graph found in ModelProto');
  const graph = model.subarray(graphSpan.payloadStart, graphSpan.end);
  const wantedIn = new Set(inputs);
  const wantedOut = new Set(outputs);
  const parts: Uint8Array[] = [];
  for (const s of spans(graph)) {
    const field = graph.subarray(s.start, s.end);
    const isInput = s.no === 11 && s.wire === 2;
    const isOutput = s.no === 12 && s.wire === 2;
    const name = isInput || isOutput ? valueInfoName(graph.subarray(s.payloadStart, s.end)) : '';
    if (isInput && wantedIn.delete(name)) {
      parts.push(message(11, floatValueInfo(graph.subarray(s.payloadStart, s.end), aliasOf(name))));
    } else if (isOutput && wantedOut.delete(name)) {
      parts.push(message(12, floatValueInfo(graph.subarray(s.payloadStart, s.end), aliasOf(name))));
    } else {
      parts.push(field);
    }
  }
  const missing = [...wantedIn, ...wantedOut];
  if (missing.length > 0) throw new Error(`'${missing[0]}' is not a graph input or output of the model`);
  for (const name of inputs) parts.push(message(1, castNode(aliasOf(name), name, ONNX_BFLOAT16)));
  for (const name of outputs) parts.push(message(1, castNode(name, aliasOf(name), ONNX_FLOAT)));
  const newGraph = concat(parts);
  return concat(top.map((s) => (s === graphSpan ? message(7, newGraph) : model.subarray(s.start, s.end))));
}

/** The fields of one message, as spans of `buf`. */
function spans(buf: Uint8Array): Span[] {
  const out: Span[] = [];
  const pos = { at: 0 };
  while (pos.at < buf.length) {
    const start = pos.at;
    const tag = readVarint(buf, pos);
    const no = Math.floor(tag / 8);
    const wire = tag % 8;
    let payloadStart = pos.at;
    switch (wire) {
      case 0:
        readVarint(buf, pos);
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
    out.push({ no, wire, start, end: pos.at, payloadStart });
  }
  return out;
}

function readVarint(buf: Uint8Array, pos: { at: number }): number {
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

const utf8 = new TextDecoder('utf-8');
const encoder = new TextEncoder();

function valueInfoName(valueInfo: Uint8Array): string {
  const s = spans(valueInfo).find((x) => x.no === 1 && x.wire === 2);
  return s ? utf8.decode(valueInfo.subarray(s.payloadStart, s.end)) : '';
}

/** A FLOAT ValueInfoProto named `name` with the shape of `original` (a tensor ValueInfoProto). */
function floatValueInfo(original: Uint8Array, name: string): Uint8Array {
  const type = payloadOf(original, 2);
  const tensorType = type && payloadOf(type, 1);
  const shape = tensorType && payloadOf(tensorType, 2);
  const newTensorType = concat([varintField(1, ONNX_FLOAT), ...(shape ? [message(2, shape)] : [])]);
  return concat([stringField(1, name), message(2, message(1, newTensorType))]);
}

function payloadOf(msg: Uint8Array, no: number): Uint8Array | undefined {
  const s = spans(msg).find((x) => x.no === no && x.wire === 2);
  return s ? msg.subarray(s.payloadStart, s.end) : undefined;
}

function castNode(input: string, output: string, to: number): Uint8Array {
  const attribute = concat([stringField(1, 'to'), varintField(3, to), varintField(20, ATTRIBUTE_INT)]);
  return concat([
    stringField(1, input),
    stringField(2, output),
    stringField(3, `nereid_bf16_cast_${output}`),
    stringField(4, 'Cast'),
    message(5, attribute),
  ]);
}

function varintBytes(value: number): number[] {
  const out: number[] = [];
  let v = value;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
}

function varintField(no: number, value: number): Uint8Array {
  return Uint8Array.from([...varintBytes(no * 8), ...varintBytes(value)]);
}

function message(no: number, payload: Uint8Array): Uint8Array {
  return concat([Uint8Array.from([...varintBytes(no * 8 + 2), ...varintBytes(payload.byteLength)]), payload]);
}

function stringField(no: number, value: string): Uint8Array {
  return message(no, encoder.encode(value));
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const p of parts) length += p.byteLength;
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

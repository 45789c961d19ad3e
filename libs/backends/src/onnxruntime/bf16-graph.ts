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

import { wireFields } from './onnx-wire';

/** TensorProto.DataType numbers used here. */
export const ONNX_FLOAT = 1;
export const ONNX_BFLOAT16 = 16;

/** AttributeProto.AttributeType INT. */
const ATTRIBUTE_INT = 2;

/** The FLOAT graph input/output standing for BF16 tensor `name`. */
export function aliasOf(name: string): string {
  return `${name}__nereid_bf16_as_fp32`;
}

/**
 * `model` (ONNX ModelProto bytes) with the named BF16 graph inputs and outputs carried as FLOAT
 * through Cast nodes (see above). Throws a plain Error when the model is malformed or a named
 * tensor is not a graph input/output.
 */
export function wrapBf16Io(model: Uint8Array, inputs: readonly string[], outputs: readonly string[]): Uint8Array {
  const top = wireFields(model);
  const graphSpan = top.find((s) => s.no === 7 && s.wire === 2);
  if (!graphSpan) throw new Error('not an ONNX model: no graph found in ModelProto');
  const graph = model.subarray(graphSpan.payloadStart, graphSpan.end);
  const wantedIn = new Set(inputs);
  const wantedOut = new Set(outputs);
  const parts: Uint8Array[] = [];
  for (const s of wireFields(graph)) {
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

const utf8 = new TextDecoder('utf-8');
const encoder = new TextEncoder();

function valueInfoName(valueInfo: Uint8Array): string {
  const s = wireFields(valueInfo).find((x) => x.no === 1 && x.wire === 2);
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
  const s = wireFields(msg).find((x) => x.no === no && x.wire === 2);
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

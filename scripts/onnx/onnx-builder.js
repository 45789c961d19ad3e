'use strict';
// Small helpers that build ONNX ModelProto messages and encode them with protobufjs, using the
// hand-written schema subset in onnx-subset.proto. Plain Node (no TypeScript, no Python onnx).
const path = require('node:path');
const protobuf = require('protobufjs');

const root = protobuf.loadSync(path.join(__dirname, 'onnx-subset.proto'));
const ModelProto = root.lookupType('onnx.ModelProto');

/** ONNX TensorProto.DataType numbers. */
const ELEM = Object.freeze({
  FLOAT: 1, UINT8: 2, INT8: 3, UINT16: 4, INT16: 5, INT32: 6, INT64: 7, STRING: 8, BOOL: 9,
  FLOAT16: 10, DOUBLE: 11, UINT32: 12, UINT64: 13, BFLOAT16: 16,
});

/** AttributeProto.AttributeType numbers for the attribute kinds the generator writes. */
const ATTR = Object.freeze({ FLOAT: 1, INT: 2, STRING: 3, FLOATS: 6, INTS: 7 });

const IR_VERSION = 8;
const OPSET = 13;

/**
 * A graph input/output. `dims` entries are numbers (fixed) or strings (symbolic, e.g. "batch");
 * -1 writes an unnamed dynamic dimension.
 */
function valueInfo(name, elemType, dims) {
  const dim = dims.map((d) => {
    if (typeof d === 'string') return { dimParam: d };
    if (d < 0) return {};
    return { dimValue: d };
  });
  return { name, type: { tensorType: { elemType, shape: { dim } } } };
}

/** One attribute; the kind is inferred from the JS value (integer → INT, array of integers → INTS). */
function attribute(name, value) {
  if (Array.isArray(value)) {
    return value.every(Number.isInteger)
      ? { name, type: ATTR.INTS, ints: value }
      : { name, type: ATTR.FLOATS, floats: value };
  }
  if (typeof value === 'string') return { name, type: ATTR.STRING, s: Buffer.from(value, 'utf8') };
  if (Number.isInteger(value)) return { name, type: ATTR.INT, i: value };
  return { name, type: ATTR.FLOAT, f: value };
}

function node(opType, inputs, outputs, attrs = {}, name = `${opType}_${outputs[0]}`) {
  const attribute_ = Object.entries(attrs).map(([k, v]) => attribute(k, v));
  return { opType, input: inputs, output: outputs, name, attribute: attribute_ };
}

/** A constant tensor stored as little-endian raw_data (`data` is a typed array). */
function initializer(name, elemType, dims, data) {
  const rawData = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return { name, dataType: elemType, dims, rawData };
}

/** Encodes a whole model; the same arguments always give the same bytes. */
function encodeModel({ graphName, nodes, inputs, outputs, initializers = [], docString = '' }) {
  const message = ModelProto.fromObject({
    irVersion: IR_VERSION,
    producerName: 'nereid-generate-models',
    producerVersion: '1',
    docString,
    opsetImport: [{ domain: '', version: OPSET }],
    graph: { name: graphName, node: nodes, initializer: initializers, input: inputs, output: outputs },
  });
  return ModelProto.encode(message).finish();
}

module.exports = { ELEM, IR_VERSION, OPSET, valueInfo, node, initializer, encodeModel };

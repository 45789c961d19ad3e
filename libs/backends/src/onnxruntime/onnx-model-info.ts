/**
 * Reads the graph inputs and outputs of an ONNX ModelProto straight from its protobuf bytes.
 *
 * Auto-complete only needs names, element types and dims (symbolic ones included). Walking the
 * protobuf wire format for those few fields costs microseconds and no memory beyond the file,
 * while opening an InferenceSession would load and optimize every weight just to be thrown away,
 * and would need the native runtime wherever configs are completed. Field numbers are those of
 * onnx.proto: ModelProto.graph = 7; GraphProto.initializer = 5, input = 11, output = 12;
 * TensorProto.name = 8; ValueInfoProto.name = 1, type = 2; TypeProto.tensor_type = 1;
 * TypeProto.Tensor.elem_type = 1, shape = 2; TensorShapeProto.dim = 1;
 * Dimension.dim_value = 1, dim_param = 2.
 */

import { wireFields } from './onnx-wire';

/** One graph input or output. */
export interface OnnxValueInfo {
  name: string;
  /** False for sequence, map, optional or sparse values (not servable as tensors). */
  isTensor: boolean;
  /** TensorProto.DataType number (0 when unknown). */
  elemType: number;
  /** Dims: a number for a fixed dim, -1 for a dynamic or symbolic one; undefined when rank is unknown. */
  dims?: number[];
  /** Symbolic names by position (e.g. `batch`), '' where the dim is fixed or unnamed. */
  dimParams?: string[];
}

export interface OnnxModelInfo {
  /** Graph inputs without an initializer: what a session run must be fed. */
  inputs: OnnxValueInfo[];
  outputs: OnnxValueInfo[];
  /** Graph inputs with an initializer (overridable initializers: a run may feed them). */
  overridable?: OnnxValueInfo[];
}

interface Field {
  no: number;
  /** Varint value (wire type 0). */
  varint?: number;
  /** Length-delimited payload (wire type 2), a view into the file. */
  bytes?: Uint8Array;
}

const utf8 = new TextDecoder('utf-8');
const TWO_POW_63 = 2 ** 63;
const TWO_POW_64 = 2 ** 64;

/** Parses a ModelProto; throws a plain Error naming what is malformed. */
export function readOnnxModelInfo(model: Uint8Array): OnnxModelInfo {
  const graph = fields(model).find((f) => f.no === 7)?.bytes;
  if (!graph) throw new Error('not an ONNX model: no graph found in ModelProto');
  const graphFields = fields(graph);
  const initializers = new Set(
    graphFields.filter((f) => f.no === 5).map((f) => stringField(fields(payload(f)), 8)),
  );
  const graphInputs = graphFields.filter((f) => f.no === 11).map((f) => readValueInfo(payload(f)));
  const inputs = graphInputs.filter((v) => !initializers.has(v.name));
  const overridable = graphInputs.filter((v) => initializers.has(v.name));
  const outputs = graphFields.filter((f) => f.no === 12).map((f) => readValueInfo(payload(f)));
  return { inputs, outputs, overridable };
}

function readValueInfo(bytes: Uint8Array): OnnxValueInfo {
  const f = fields(bytes);
  const name = stringField(f, 1);
  const type = f.find((x) => x.no === 2)?.bytes;
  const tensorType = type ? fields(type).find((x) => x.no === 1)?.bytes : undefined;
  if (!tensorType) return { name, isTensor: false, elemType: 0 };
  const tf = fields(tensorType);
  const elemType = tf.find((x) => x.no === 1)?.varint ?? 0;
  const shape = tf.find((x) => x.no === 2)?.bytes;
  if (!shape) return { name, isTensor: true, elemType };
  const dims: number[] = [];
  const dimParams: string[] = [];
  for (const d of fields(shape).filter((x) => x.no === 1)) {
    const df = fields(payload(d));
    const value = df.find((x) => x.no === 1)?.varint;
    const param = df.find((x) => x.no === 2)?.bytes;
    dims.push(value !== undefined && value >= 0 ? value : -1);
    dimParams.push(param ? utf8.decode(param) : '');
  }
  return { name, isTensor: true, elemType, dims, dimParams };
}

function payload(f: Field): Uint8Array {
  if (!f.bytes) throw new Error(`malformed ONNX model: field ${f.no} is not length-delimited`);
  return f.bytes;
}

function stringField(f: Field[], no: number): string {
  const b = f.find((x) => x.no === no)?.bytes;
  return b ? utf8.decode(b) : '';
}

/** The varint and length-delimited fields of one message (fixed32/64 fields are skipped). */
function fields(buf: Uint8Array): Field[] {
  const out: Field[] = [];
  for (const f of wireFields(buf)) {
    if (f.varint !== undefined) out.push({ no: f.no, varint: signed(f.varint) });
    else if (f.wire === 2) out.push({ no: f.no, bytes: buf.subarray(f.payloadStart, f.end) });
  }
  return out;
}

/** A varint as a 64-bit signed value: negatives (two's complement) come back negative. */
function signed(value: number): number {
  return value >= TWO_POW_63 ? value - TWO_POW_64 : value;
}

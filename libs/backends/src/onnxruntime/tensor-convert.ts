import { isUtf8 } from 'node:buffer';
import { InferenceError } from '@nereid/protocol';
import type { DataType, Tensor, TensorData } from '@nereid/tensor';
import { ORT_ARRAY, dataTypeFromOrt, ortTypeOf, type OrtType } from './datatypes';
import type { OrtData, RunTensor } from './messages';

const utf8Decoder = new TextDecoder('utf-8');
const utf8Encoder = new TextEncoder();

/** The ORT type of a request tensor. */
export function ortTypeFor(t: Tensor, modelName: string): OrtType {
  const type = ortTypeOf(t.datatype);
  if (type === undefined) {
    throw InferenceError.unsupported(
      `datatype ${t.datatype} of input '${t.name}' is not supported by the onnxruntime backend for model '${modelName}'`,
    );
  }
  return type;
}

/**
 * Fails (INVALID_ARG) a BYTES input onnxruntime-node would alter on its way to the model. Its
 * string tensors are JS strings that it writes as UTF-8 C strings: an element ends at its first
 * NUL byte (`a\0b` reaches the model as `a`), and bytes that are not UTF-8 cannot be held by a
 * string at all (decoding makes them U+FFFD; a latin1 mapping would hand the model other bytes).
 * Only UTF-8 text without NUL passes unchanged, both ways.
 */
export function checkOrtBytes(t: Tensor, modelName: string): void {
  if (t.datatype !== 'BYTES' || !Array.isArray(t.data)) return;
  const elements = t.data;
  for (let i = 0; i < elements.length; i++) {
    const b = elements[i];
    if (b.indexOf(0) !== -1) {
      throw InferenceError.invalidArg(
        `BYTES element ${i} of input '${t.name}' for model '${modelName}' holds a NUL byte, which the onnxruntime backend cannot pass to the model (onnxruntime-node string tensors end at the first NUL)`,
      );
    }
    if (!isUtf8(b)) {
      throw InferenceError.invalidArg(
        `BYTES element ${i} of input '${t.name}' for model '${modelName}' is not valid UTF-8, which the onnxruntime backend cannot pass to the model unchanged (onnxruntime-node string tensors hold text)`,
      );
    }
  }
}

/**
 * Joins the data of several request tensors (same datatype) into one ORT feed. `copy` forces a
 * fresh buffer even for a single part (so the buffer can be transferred to a worker thread without
 * touching the request's memory). BYTES elements become strings (checkOrtBytes said they may).
 */
export function joinData(parts: readonly Tensor[], type: OrtType, copy: boolean): OrtData {
  if (type === 'string') return parts.flatMap((p) => bytesOf(p).map((b) => utf8Decoder.decode(b)));
  const Ctor = ORT_ARRAY[type];
  // A single part is handed over as it is (onnxruntime-node honours the view's byteOffset).
  const only = parts.length === 1 ? parts[0].data : undefined;
  if (!copy && only instanceof Ctor) return only;
  let byteLength = 0;
  for (const p of parts) byteLength += numericOf(p).byteLength;
  const out = new Uint8Array(byteLength);
  let at = 0;
  for (const p of parts) {
    const src = numericOf(p);
    out.set(new Uint8Array(src.buffer, src.byteOffset, src.byteLength), at);
    at += src.byteLength;
  }
  return new Ctor(out.buffer, 0, byteLength / Ctor.BYTES_PER_ELEMENT);
}

/**
 * A session output → a response tensor (strings become UTF-8 bytes). onnxruntime-node decodes the
 * bytes of a string output as UTF-8, NULs kept: bytes that are not UTF-8 arrive as U+FFFD, which
 * cannot be told from a model's own U+FFFD (a limit of onnxruntime-node, not checked here).
 */
export function tensorFromRun(rt: RunTensor, shape: number[], data: OrtData = rt.data): Tensor {
  const datatype: DataType | undefined = dataTypeFromOrt(rt.type);
  if (datatype === undefined) throw InferenceError.internal(`unsupported ONNX Runtime output type '${rt.type}' of '${rt.name}'`);
  const tensorData: TensorData = Array.isArray(data) ? data.map((s) => utf8Encoder.encode(s)) : data;
  return { name: rt.name, datatype, shape, data: tensorData };
}

/** Elements [start, end) of an output, as a view (numeric) or a new array (strings). */
export function sliceElements(data: OrtData, start: number, end: number): OrtData {
  if (start === 0 && end === data.length) return data;
  return Array.isArray(data) ? data.slice(start, end) : data.subarray(start, end);
}

function bytesOf(t: Tensor): Uint8Array[] {
  if (!Array.isArray(t.data)) throw InferenceError.invalidArg(`input '${t.name}' of datatype BYTES must hold byte strings`);
  return t.data;
}

function numericOf(t: Tensor): Exclude<TensorData, Uint8Array[]> {
  if (Array.isArray(t.data)) throw InferenceError.invalidArg(`input '${t.name}' of datatype ${t.datatype} holds byte strings`);
  return t.data;
}

import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { InferenceError } from '@nereid/protocol';
import { BYTES_LENGTH_PREFIX, elementCount, isDataType, type DataType, type Tensor, type TensorData } from '@nereid/tensor';
import type { BlobBuilder } from './frames';
import type { ShmPool } from './shm-pool';

/**
 * A tensor as a frame header describes it: `[name, datatype, shape, byte length, where]`, `where`
 * being the offset of its bytes in the blob (a number), a shm file holding them (a string), or, from
 * the stub only, `[i]`: input number `i` of the same request, unchanged (reuse its bytes).
 */
export type WireTensor = [name: string, datatype: string, shape: number[], length: number, where: number | string | [number]];

/** Where large tensors go and how to name the files; shared by one stub process. */
export interface ShmSettings {
  dir: string;
  /** File name prefix owned by one stub process (the stub uses it too). */
  prefix: string;
  /** Tensors of at least this many bytes travel through a shm file. */
  threshold: number;
  /** The server's files for large tensors it sends. */
  pool: ShmPool;
  /** The stub's files the server has read (handed back in the next frame's `rel`). */
  released: string[];
}

type NumericCtor = {
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): Exclude<TensorData, Uint8Array[]>;
  readonly BYTES_PER_ELEMENT: number;
};

const VIEW: Readonly<Record<Exclude<DataType, 'BYTES'>, NumericCtor>> = {
  BOOL: Uint8Array, UINT8: Uint8Array, UINT16: Uint16Array, UINT32: Uint32Array, UINT64: BigUint64Array,
  INT8: Int8Array, INT16: Int16Array, INT32: Int32Array, INT64: BigInt64Array,
  FP16: Uint16Array, FP32: Float32Array, FP64: Float64Array, BF16: Uint16Array,
};

/** The wire bytes of a tensor (BYTES: u32 LE length + bytes per element). */
export function tensorBytes(t: Tensor): Uint8Array {
  const data = t.data;
  if (!Array.isArray(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  let total = 0;
  for (const el of data) total += 4 + el.byteLength;
  const out = Buffer.allocUnsafe(total);
  let pos = 0;
  for (const el of data) {
    out.writeUInt32LE(el.byteLength, pos);
    out.set(el, pos + 4);
    pos += 4 + el.byteLength;
  }
  return out;
}

/**
 * Describes tensors for a frame. Small ones go inline into `blob`; large ones are written to files
 * of the pool (the stub maps them and hands them back). Returns the descriptors and, when files are
 * being written, a promise to await before the frame is sent.
 */
export function encodeTensors(
  tensors: readonly Tensor[],
  blob: BlobBuilder,
  shm: ShmSettings,
): { descs: WireTensor[]; pending?: Promise<unknown> } {
  const descs: WireTensor[] = new Array<WireTensor>(tensors.length);
  let writes: Promise<unknown>[] | undefined;
  for (let i = 0; i < tensors.length; i++) {
    const t = tensors[i];
    const bytes = tensorBytes(t);
    if (bytes.byteLength >= shm.threshold) {
      const { path: file, written } = shm.pool.write(bytes);
      const desc: WireTensor = [t.name, t.datatype, t.shape, bytes.byteLength, file];
      // /dev/shm full or unusable: the bytes go inline instead (the frame is sent after every
      // write has settled, so the blob can still grow and the descriptor change).
      (writes ??= []).push(written.catch(() => (desc[4] = blob.add(bytes))));
      descs[i] = desc;
    } else {
      descs[i] = [t.name, t.datatype, t.shape, bytes.byteLength, blob.add(bytes)];
    }
  }
  return writes ? { descs, pending: Promise.all(writes) } : { descs };
}

/** True when some descriptor needs a file read (decoding is then asynchronous). */
export function needsFileRead(descs: readonly WireTensor[] | undefined): boolean {
  if (descs === undefined) return false;
  for (let i = 0; i < descs.length; i++) if (typeof descs[i][4] === 'string') return true;
  return false;
}

/**
 * Decodes inline descriptors synchronously (callers check `needsFileRead` first). `inputs` are the
 * request's own inputs, which outputs may reference (`a`).
 */
export function decodeInlineTensors(descs: readonly WireTensor[], blob: Uint8Array, inputs: readonly Tensor[] = []): Tensor[] {
  const out = new Array<Tensor>(descs.length);
  for (let i = 0; i < descs.length; i++) {
    const d = descs[i];
    const where = d[4];
    if (typeof where === 'number') out[i] = toTensor(d, blob.subarray(where, where + d[3]));
    else if (Array.isArray(where)) out[i] = aliasOf(d, where[0], inputs);
    else throw InferenceError.internal(`python stub sent tensor '${d[0]}' in a file where inline bytes were expected`);
  }
  return out;
}

/** Decodes descriptors, reading the stub's shm files (listed in `shm.released` once read). */
export async function decodeTensors(
  descs: readonly WireTensor[],
  blob: Uint8Array,
  shm: ShmSettings,
  inputs: readonly Tensor[] = [],
): Promise<Tensor[]> {
  return Promise.all(
    descs.map(async (d) => {
      const file = d[4];
      if (typeof file !== 'string') return decodeInlineTensors([d], blob, inputs)[0];
      // Errors name the tensor, never the file: its name holds the stub's shared-memory prefix,
      // which a client must not learn (the chain of Triton's 2025 python-backend advisory).
      if (!file.startsWith(path.join(shm.dir, shm.prefix))) throw InferenceError.internal(`python stub named a file outside its shared-memory folder for tensor '${d[0]}'`);
      try {
        return toTensor(d, await readWhole(file, d[3], d[0]));
      } finally {
        shm.released.push(file);
      }
    }),
  );
}

function aliasOf(d: WireTensor, index: number, inputs: readonly Tensor[]): Tensor {
  const source = inputs[index];
  if (!source || source.datatype !== d[1]) throw InferenceError.internal(`python model returned tensor '${d[0]}' as an unknown input`);
  return { name: d[0], datatype: source.datatype, shape: d[2], data: source.data };
}

/**
 * Reads a stub's shm file of `length` bytes. The length is the stub's word: it is checked against
 * the file before anything is allocated, so that the server never allocates more than the stub has
 * already written (a descriptor claiming 2^40 bytes would otherwise be a RangeError or a huge buffer).
 */
async function readWhole(file: string, length: number, tensor: string): Promise<Uint8Array> {
  if (!Number.isSafeInteger(length) || length < 0) throw InferenceError.internal(`python stub sent a bad byte length for tensor '${tensor}'`);
  const handle = await fsp.open(file, 'r');
  try {
    const { size } = await handle.stat();
    if (size < length) throw InferenceError.internal(`the shared-memory file of tensor '${tensor}' is shorter than ${length} bytes`);
    const out = new Uint8Array(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await handle.read(out, done, length - done, done);
      if (bytesRead === 0) throw InferenceError.internal(`the shared-memory file of tensor '${tensor}' is shorter than ${length} bytes`);
      done += bytesRead;
    }
    return out;
  } finally {
    await handle.close();
  }
}

function toTensor(d: WireTensor, bytes: Uint8Array): Tensor {
  const [name, datatype, shape] = d;
  if (!isDataType(datatype)) throw InferenceError.internal(`python model returned tensor '${name}' with unknown datatype '${datatype}'`);
  if (!Array.isArray(shape) || !shape.every((n) => Number.isSafeInteger(n) && n >= 0)) {
    throw InferenceError.internal(`python model returned tensor '${name}' with a bad shape`);
  }
  const count = elementCount(shape);
  if (datatype === 'BYTES') return { name, datatype, shape, data: splitBytes(name, bytes, count) };
  const ctor = VIEW[datatype];
  if (bytes.byteLength !== count * ctor.BYTES_PER_ELEMENT) {
    throw InferenceError.internal(
      `python model returned tensor '${name}' with ${bytes.byteLength} bytes, expected ${count * ctor.BYTES_PER_ELEMENT} for shape [${shape.join(',')}]`,
    );
  }
  const aligned = bytes.byteOffset % ctor.BYTES_PER_ELEMENT === 0 ? bytes : Uint8Array.prototype.slice.call(bytes);
  return { name, datatype, shape, data: new ctor(aligned.buffer, aligned.byteOffset, count) };
}

function splitBytes(name: string, bytes: Uint8Array, count: number): Uint8Array[] {
  // Each element takes at least its 4-byte length: a shape that claims more elements than the
  // bytes can hold is refused before the element array is allocated for it.
  if (count > bytes.byteLength / BYTES_LENGTH_PREFIX) throw shortBytes(name, count);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Uint8Array[] = new Array<Uint8Array>(count);
  let pos = 0;
  for (let i = 0; i < count; i++) {
    if (pos + BYTES_LENGTH_PREFIX > bytes.byteLength) throw shortBytes(name, count);
    const len = view.getUint32(pos, true);
    out[i] = bytes.subarray(pos + BYTES_LENGTH_PREFIX, pos + BYTES_LENGTH_PREFIX + len);
    pos += BYTES_LENGTH_PREFIX + len;
  }
  return out;
}

const shortBytes = (name: string, count: number): InferenceError => InferenceError.internal(`BYTES tensor '${name}' is shorter than its ${count} elements`);

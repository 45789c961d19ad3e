import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { InferenceError } from '@nereid/protocol';
import { elementCount, isDataType, type DataType, type Tensor, type TensorData } from '@nereid/tensor';
import type { BlobBuilder } from './frames';
import type { ShmPool } from './shm-pool';

/** A tensor as the frame header describes it: inline in the blob (`o`) or in a shm file (`f`). */
export interface WireTensor {
  n: string;
  t: string;
  s: number[];
  l: number;
  o?: number;
  f?: string;
  /** The stub returned input number `a` of the same request unchanged: reuse its bytes. */
  a?: number;
}

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
  const descs: WireTensor[] = [];
  const writes: Promise<unknown>[] = [];
  for (const t of tensors) {
    const bytes = tensorBytes(t);
    const desc: WireTensor = { n: t.name, t: t.datatype, s: t.shape, l: bytes.byteLength };
    if (bytes.byteLength >= shm.threshold) {
      const { path: file, written } = shm.pool.write(bytes);
      desc.f = file;
      // /dev/shm full or unusable: the bytes go inline instead (the frame is sent after every
      // write has settled, so the blob can still grow and the descriptor change).
      writes.push(
        written.catch(() => {
          delete desc.f;
          desc.o = blob.add(bytes);
        }),
      );
    } else {
      desc.o = blob.add(bytes);
    }
    descs.push(desc);
  }
  return writes.length > 0 ? { descs, pending: Promise.all(writes) } : { descs };
}

/** True when some descriptor needs a file read (decoding is then asynchronous). */
export function needsFileRead(descs: readonly WireTensor[] | undefined): boolean {
  return descs !== undefined && descs.some((d) => d.f !== undefined);
}

/**
 * Decodes inline descriptors synchronously (callers check `needsFileRead` first). `inputs` are the
 * request's own inputs, which outputs may reference (`a`).
 */
export function decodeInlineTensors(descs: readonly WireTensor[], blob: Uint8Array, inputs: readonly Tensor[] = []): Tensor[] {
  return descs.map((d) => (d.a !== undefined ? aliasOf(d, inputs) : toTensor(d, blob.subarray(d.o ?? 0, (d.o ?? 0) + d.l))));
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
      if (d.f === undefined) return decodeInlineTensors([d], blob, inputs)[0];
      if (!d.f.startsWith(path.join(shm.dir, shm.prefix))) throw InferenceError.internal(`python stub named a file outside its shared-memory folder: '${d.f}'`);
      try {
        return toTensor(d, await readWhole(d.f, d.l));
      } finally {
        shm.released.push(d.f);
      }
    }),
  );
}

function aliasOf(d: WireTensor, inputs: readonly Tensor[]): Tensor {
  const source = inputs[d.a ?? -1];
  if (!source || source.datatype !== d.t) throw InferenceError.internal(`python model returned tensor '${d.n}' as an unknown input`);
  return { name: d.n, datatype: source.datatype, shape: d.s, data: source.data };
}

async function readWhole(file: string, length: number): Promise<Uint8Array> {
  const out = new Uint8Array(length);
  const handle = await fsp.open(file, 'r');
  try {
    let done = 0;
    while (done < length) {
      const { bytesRead } = await handle.read(out, done, length - done, done);
      if (bytesRead === 0) throw InferenceError.internal(`shared-memory file '${file}' is shorter than ${length} bytes`);
      done += bytesRead;
    }
  } finally {
    await handle.close();
  }
  return out;
}

function toTensor(d: WireTensor, bytes: Uint8Array): Tensor {
  if (!isDataType(d.t)) throw InferenceError.internal(`python model returned tensor '${d.n}' with unknown datatype '${d.t}'`);
  const count = elementCount(d.s);
  if (d.t === 'BYTES') return { name: d.n, datatype: d.t, shape: d.s, data: splitBytes(d.n, bytes, count) };
  const ctor = VIEW[d.t];
  if (bytes.byteLength !== count * ctor.BYTES_PER_ELEMENT) {
    throw InferenceError.internal(
      `python model returned tensor '${d.n}' with ${bytes.byteLength} bytes, expected ${count * ctor.BYTES_PER_ELEMENT} for shape [${d.s.join(',')}]`,
    );
  }
  const aligned = bytes.byteOffset % ctor.BYTES_PER_ELEMENT === 0 ? bytes : Uint8Array.prototype.slice.call(bytes);
  return { name: d.n, datatype: d.t, shape: d.s, data: new ctor(aligned.buffer, aligned.byteOffset, count) };
}

function splitBytes(name: string, bytes: Uint8Array, count: number): Uint8Array[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Uint8Array[] = new Array<Uint8Array>(count);
  let pos = 0;
  for (let i = 0; i < count; i++) {
    if (pos + 4 > bytes.byteLength) throw InferenceError.internal(`BYTES tensor '${name}' is shorter than its ${count} elements`);
    const len = view.getUint32(pos, true);
    out[i] = bytes.subarray(pos + 4, pos + 4 + len);
    pos += 4 + len;
  }
  return out;
}

import type { OrtType } from './datatypes';

/** Element storage onnxruntime-node accepts and returns (BYTES travel as strings). */
export type OrtData =
  | Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array
  | BigUint64Array | BigInt64Array | Float32Array | Float64Array | string[];

/** A tensor on its way into or out of a session, as plain data (structured-cloneable). */
export interface RunTensor {
  name: string;
  type: OrtType;
  dims: number[];
  data: OrtData;
}

/** Messages from the instance to its session worker. */
export type ToWorker =
  | { kind: 'run'; id: number; feeds: RunTensor[]; fetches: string[]; quiet?: boolean }
  | { kind: 'close' };

/** Messages from the session worker to its instance. */
export type FromWorker =
  | { kind: 'ready'; inputNames: string[]; outputNames: string[] }
  | { kind: 'load-error'; message: string }
  /** `start`/`end`: when the run executed, in epoch ms (performance.timeOrigin + performance.now()). */
  | { kind: 'result'; id: number; outputs: RunTensor[]; start: number; end: number }
  | { kind: 'run-error'; id: number; message: string }
  | { kind: 'closed' };

/** What the worker is started with (`workerData`). */
export interface WorkerInit {
  /** The model file, or the model's bytes (a BF16 model is opened rewritten, see bf16-graph.ts). */
  model: string | Uint8Array;
  options: unknown;
}

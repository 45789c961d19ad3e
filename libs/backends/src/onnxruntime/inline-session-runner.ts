import * as ort from 'onnxruntime-node';
import { dataTypeFromOnnx, ortTypeOf, type OrtType } from './datatypes';
import type { RunTensor } from './messages';
import type { SessionOptions } from './session-options';
import { QUIET_RUN, type RunOptions, type SessionInput, type SessionRunner } from './session-runner';

/**
 * Runs the session on the calling thread (the event loop). Only for tiny models, where the run
 * is cheaper than a hop to a worker thread: `run()` blocks the thread for its whole duration.
 *
 * CPU sessions are opened through onnxruntime-node's native session class and their runs are
 * coalesced: every run asked for during one turn of the event loop executes back to back in one
 * `setImmediate` callback, and the requests' answers are built after the last of them (in the
 * microtasks that follow). The public `run()` defers each run to its own `setImmediate` through
 * two async functions and re-wraps every output; and running each session run where its request
 * is decoded (tried: the native `run()` called at once) made the server slower, the code of
 * HTTP, JSON, the scheduler and onnxruntime interleaving request by request (bench/RESULTS.md).
 * Sessions with another execution provider than the CPU's, or an onnxruntime-node whose binding
 * looks different, take the public API.
 */
export class InlineSessionRunner implements SessionRunner {
  private constructor(private session: EventLoopSession | undefined) {
    this.direct = session?.direct ?? false;
    this.inputNames = session?.inputNames ?? [];
    this.outputNames = session?.outputNames ?? [];
    this.inputs = session?.inputs;
  }

  /** Whether runs go to the native session through the per-turn queue. */
  readonly direct: boolean;
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputs: readonly SessionInput[] | undefined;

  /** `model`: the model file, or its bytes. */
  static async open(model: string | Uint8Array, options: SessionOptions): Promise<InlineSessionRunner> {
    const native = openNative(model, options);
    const session = native
      ? nativeSession(native)
      : publicSession(await (typeof model === 'string' ? ort.InferenceSession.create(model, options) : ort.InferenceSession.create(model, options)));
    return new InlineSessionRunner(session);
  }

  run(feeds: RunTensor[], fetches: string[], options?: RunOptions): Promise<RunTensor[]> {
    const session = this.session;
    if (!session) return Promise.reject(new Error('the session is closed'));
    const ortFeeds: Record<string, ort.Tensor> = {};
    for (const t of feeds) {
      // onnxruntime-node has no bfloat16: BF16 feeds are converted by Bf16SessionRunner before here.
      if (t.type === 'bfloat16') return Promise.reject(new Error(`input '${t.name}': onnxruntime-node cannot take bfloat16 tensors`));
      ortFeeds[t.name] = new ort.Tensor(t.type, t.data, t.dims);
    }
    return session.run(ortFeeds, fetches, options);
  }

  close(): Promise<void> {
    const session = this.session;
    this.session = undefined;
    return session ? session.close() : Promise.resolve();
  }
}

/** One session on the event loop, through either of onnxruntime-node's APIs. */
interface EventLoopSession {
  readonly direct: boolean;
  readonly inputNames: readonly string[];
  readonly inputs: readonly SessionInput[];
  readonly outputNames: readonly string[];
  run(feeds: Record<string, ort.Tensor>, fetches: string[], options: RunOptions | undefined): Promise<RunTensor[]>;
  close(): Promise<void>;
}

function publicSession(session: ort.InferenceSession): EventLoopSession {
  return {
    direct: false,
    inputNames: session.inputNames,
    inputs: session.inputMetadata.map((m) => ({
      name: m.name,
      type: m.isTensor ? (m.type as OrtType) : undefined,
      shape: m.isTensor ? m.shape.map((d) => (typeof d === 'number' ? d : -1)) : [],
    })),
    outputNames: session.outputNames,
    // Every output is fetched: onnxruntime-node 1.23 mislabels the results of a partial fetch list.
    run: (feeds, fetches, options) => {
      const timing = options?.timing;
      if (timing) timing.start = performance.now();
      return session.run(feeds, options?.quiet ? QUIET_RUN : {}).then((results) => {
        if (timing) timing.end = performance.now();
        return pick(results, fetches);
      });
    },
    close: () => session.release(),
  };
}

function nativeSession(session: NativeSession): EventLoopSession {
  const outputNames = session.outputMetadata.map((m) => m.name);
  /** Every output, as the native `run()` takes its fetches. */
  const allOutputs: Record<string, null> = {};
  for (const name of outputNames) allOutputs[name] = null;
  return {
    direct: true,
    inputNames: session.inputMetadata.map((m) => m.name),
    inputs: session.inputMetadata.map((m) => {
      const datatype = m.isTensor ? dataTypeFromOnnx(m.type) : undefined;
      return { name: m.name, type: datatype && ortTypeOf(datatype), shape: m.isTensor ? [...m.shape] : [] };
    }),
    outputNames,
    run: (feeds, fetches, options) =>
      new Promise((resolve, reject) => queueRun({ session, feeds, allOutputs, fetches, options, resolve, reject })),
    close: async () => {
      // Runs already queued for this session go first.
      await new Promise<void>((resolve) => setImmediate(resolve));
      session.dispose();
    },
  };
}

function pick(results: Record<string, ort.Tensor>, fetches: string[]): RunTensor[] {
  return fetches.map((name) => {
    const t = results[name];
    if (!t) throw new Error(`ONNX Runtime returned no output '${name}'`);
    return { name, type: t.type as OrtType, dims: Array.from(t.dims), data: t.data as RunTensor['data'] };
  });
}

interface QueuedRun {
  session: NativeSession;
  feeds: Record<string, ort.Tensor>;
  allOutputs: Record<string, null>;
  fetches: string[];
  options: RunOptions | undefined;
  resolve: (outputs: RunTensor[]) => void;
  reject: (error: unknown) => void;
}

/** Runs asked for during this turn of the event loop, for every event-loop session. */
let queued: QueuedRun[] = [];
const RUN_OPTIONS = {};

function queueRun(run: QueuedRun): void {
  queued.push(run);
  if (queued.length === 1) setImmediate(runQueued);
}

function runQueued(): void {
  const runs = queued;
  queued = [];
  for (const r of runs) {
    let outputs: RunTensor[];
    const timing = r.options?.timing;
    try {
      if (timing) timing.start = performance.now();
      const results = r.session.run(r.feeds, r.allOutputs, r.options?.quiet ? QUIET_RUN : RUN_OPTIONS);
      if (timing) timing.end = performance.now();
      outputs = pick(results, r.fetches);
    } catch (e) {
      r.reject(e);
      continue;
    }
    r.resolve(outputs);
  }
}

/** The class behind onnxruntime-node's sessions (dist/binding.js), as far as it is used here. */
interface NativeSession {
  loadModel(modelPath: string, options: SessionOptions): void;
  loadModel(buffer: ArrayBufferLike, byteOffset: number, byteLength: number, options: SessionOptions): void;
  run(feeds: Record<string, ort.Tensor>, fetches: Record<string, null>, options: object): Record<string, ort.Tensor>;
  /** `type`: ONNX's element type number; `shape`: -1 for a free dimension. */
  readonly inputMetadata: ReadonlyArray<{ name: string; isTensor: boolean; type: number; shape: number[] }>;
  readonly outputMetadata: ReadonlyArray<{ name: string }>;
  dispose(): void;
}

interface NativeBinding {
  binding: { InferenceSession: new () => NativeSession };
  initOrt(): void;
}

let nativeBinding: NativeBinding | null | undefined;

function loadBinding(): NativeBinding | undefined {
  if (nativeBinding === undefined) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const b = require('onnxruntime-node/dist/binding') as Partial<NativeBinding>;
      const proto = (b.binding?.InferenceSession as { prototype?: Partial<NativeSession> } | undefined)?.prototype;
      nativeBinding =
        typeof b.initOrt === 'function' && typeof proto?.loadModel === 'function' && typeof proto.run === 'function'
          ? (b as NativeBinding)
          : null;
    } catch {
      nativeBinding = null;
    }
  }
  return nativeBinding ?? undefined;
}

/** A CPU session opened through onnxruntime-node's native class (undefined: use the public API). */
function openNative(model: string | Uint8Array, options: SessionOptions): NativeSession | undefined {
  if (process.env.NEREID_ORT_PUBLIC_API === '1') return undefined;
  const eps = options.executionProviders ?? ['cpu'];
  if (!eps.every((ep) => (typeof ep === 'string' ? ep : ep.name) === 'cpu')) return undefined;
  const b = loadBinding();
  if (!b) return undefined;
  b.initOrt();
  const session = new b.binding.InferenceSession();
  if (typeof model === 'string') session.loadModel(model, options);
  else session.loadModel(model.buffer, model.byteOffset, model.byteLength, options);
  return session;
}

import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { FromWorker, RunTensor, ToWorker, WorkerInit } from './messages';
import type { SessionOptions } from './session-options';
import type { RunOptions, RunTiming, SessionRunner } from './session-runner';

const WORKER_SCRIPT = path.join(__dirname, 'session-worker.js');

interface Pending {
  resolve: (outputs: RunTensor[]) => void;
  reject: (error: Error) => void;
  timing: RunTiming | undefined;
}

/**
 * Runs the session in a worker thread of its own, so `session.run()` never blocks the event loop.
 * Input buffers are transferred to the worker and output buffers transferred back (no copies).
 * The worker only keeps the process alive while a run is in flight.
 */
export class WorkerSessionRunner implements SessionRunner {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private exitReason: string | undefined;
  private closing: (() => void) | undefined;

  private constructor(
    private readonly worker: Worker,
    readonly inputNames: readonly string[],
    readonly outputNames: readonly string[],
  ) {
    worker.on('message', (m: FromWorker) => this.onMessage(m));
    worker.on('error', (e: Error) => this.onExit(`session worker failed: ${e.message}`));
    worker.on('exit', (code: number) => this.onExit(`session worker exited with code ${code}`));
    worker.unref();
  }

  /** Starts the worker and waits until its session is open; rejects with ORT's load error. */
  static open(model: string | Uint8Array, options: SessionOptions): Promise<WorkerSessionRunner> {
    const init: WorkerInit = { model, options };
    const worker = new Worker(WORKER_SCRIPT, { workerData: init });
    return new Promise((resolve, reject) => {
      const onMessage = (m: FromWorker): void => {
        detach();
        if (m.kind === 'ready') resolve(new WorkerSessionRunner(worker, m.inputNames, m.outputNames));
        else fail(m.kind === 'load-error' ? m.message : `unexpected message '${m.kind}' from session worker`);
      };
      const onError = (e: Error): void => fail(e.message);
      const onExit = (code: number): void => fail(`session worker exited with code ${code} while loading`);
      const detach = (): void => {
        worker.off('message', onMessage).off('error', onError).off('exit', onExit);
      };
      const fail = (message: string): void => {
        detach();
        void worker.terminate();
        reject(new Error(message));
      };
      worker.on('message', onMessage).on('error', onError).on('exit', onExit);
    });
  }

  run(feeds: RunTensor[], fetches: string[], options?: RunOptions): Promise<RunTensor[]> {
    if (this.exitReason !== undefined) return Promise.reject(new Error(this.exitReason));
    const id = this.nextId++;
    const transfer: ArrayBuffer[] = [];
    for (const t of feeds) {
      if (Array.isArray(t.data)) continue;
      const buffer = t.data.buffer;
      if (buffer instanceof ArrayBuffer && !transfer.includes(buffer)) transfer.push(buffer);
    }
    return new Promise<RunTensor[]>((resolve, reject) => {
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { resolve, reject, timing: options?.timing });
      this.post({ kind: 'run', id, feeds, fetches, quiet: options?.quiet }, transfer);
    });
  }

  async close(): Promise<void> {
    if (this.exitReason !== undefined) return;
    this.worker.ref();
    const closed = new Promise<void>((resolve) => {
      this.closing = resolve;
    });
    this.post({ kind: 'close' });
    await closed;
    await this.worker.terminate();
  }

  private post(message: ToWorker, transfer: ArrayBuffer[] = []): void {
    this.worker.postMessage(message, transfer);
  }

  private onMessage(m: FromWorker): void {
    if (m.kind === 'closed') {
      this.exitReason = 'the session is closed';
      this.closing?.();
      return;
    }
    if (m.kind !== 'result' && m.kind !== 'run-error') return;
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (this.pending.size === 0) this.worker.unref();
    if (m.kind === 'result') {
      if (p.timing) {
        // The worker's clock has its own origin: both sides agree on epoch time.
        p.timing.start = m.start - performance.timeOrigin;
        p.timing.end = m.end - performance.timeOrigin;
      }
      p.resolve(m.outputs);
    } else {
      p.reject(new Error(m.message));
    }
  }

  private onExit(reason: string): void {
    this.exitReason ??= reason;
    for (const p of this.pending.values()) p.reject(new Error(this.exitReason));
    this.pending.clear();
    this.closing?.();
  }
}

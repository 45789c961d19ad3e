import { InferenceError, nanos, toInferenceError, type ExecutionItem, type InferenceRequest } from '@nereid/protocol';
import { ignoreExecution, type LoadContext, type ModelInstance, type ReportExecution } from '../backend';
import { processRssBytes, type MemoryUsage } from '../memory-usage';
import { BlsBridge } from './bls-bridge';
import { MetricBridge } from './metric-bridge';
import { ModelControlBridge } from './model-control-bridge';
import { BlobBuilder, MSG, type Frame } from './frames';
import { initArgs } from './init-args';
import { OpenRequests } from './open-requests';
import { describeExit, StubProcess, type StubExit, type StubLaunch } from './stub-process';
import { errorFromWire, makeResponse, parametersJson, type WireResponse } from './wire-responses';
import { decodeInlineTensors, decodeTensors, encodeTensors, needsFileRead, type WireTensor } from './wire-tensors';

const FINALIZE_TIMEOUT_MS = 30_000;

export interface InstanceOptions {
  ctx: LoadContext;
  launch: StubLaunch;
  /** Absolute path of the model file (`<version dir>/model.py`). */
  modelFile: string;
  decoupled: boolean;
  /** An idle stub to take over for the first start (one left by auto-complete) instead of spawning. */
  spare?: StubProcess;
}

interface Waiter {
  resolve: () => void;
  reject: (e: InferenceError) => void;
}

/** EXECUTE_DONE's header: `[batch, entries, indexes of requests not executed?]` or `[batch, error message]`. */
type ExecuteDone = [number, (WireResponse | null)[] | string, number[]?];

/** A batch handed to the stub and not answered yet. */
interface OpenBatch {
  items: ExecutionItem[];
  done: () => void;
  report: ReportExecution;
  /** How long encoding its inputs took (ms). */
  inputMs: number;
  /** When its EXECUTE frame was handed to the stub's socket (performance.now() ms, before the write). */
  sentAt: number;
}

/** One model instance = one Python stub process, restarted (re-initialized) when it dies. */
export class PythonModelInstance implements ModelInstance {
  /**
   * Batches handed to the stub at once. The stub still runs one `execute` at a time, as Triton's
   * does; the second batch waits in its socket, so the stub reads it as soon as the first is done
   * instead of sleeping until the server has answered the first one and sent the next.
   */
  readonly concurrency = 2;
  /** The stub's resident memory once its model was initialized (a restarted stub is not measured again). */
  memoryUsage: readonly MemoryUsage[] = [];
  private proc!: StubProcess;
  private ready: Promise<void> = Promise.resolve();
  private readyFailed = false;
  private initWaiter?: Waiter;
  private finalized?: () => void;
  private unloading = false;
  /** `initialize` succeeded in the current stub (execute skips awaiting `ready`). */
  private readyNow = false;
  private nextKey = 1;
  /** Frames are handled in order; one whose handling waits (file reads, BLS) queues the later ones here. */
  private chain: Promise<void> = Promise.resolve();
  private waiting = 0;
  private readonly batches = new Map<number, OpenBatch>();
  /** When the stub last finished a batch: it runs one at a time, so a batch sent earlier starts then. */
  private lastDoneAt = 0;
  /** Time spent reading responses' outputs (ms), summed while an EXECUTE_DONE is handled. */
  private readMs = 0;
  private readonly open: OpenRequests;
  private readonly bls: BlsBridge;
  private readonly metrics: MetricBridge;
  private readonly control: ModelControlBridge;
  private readonly modelName: string;
  /**
   * Outputs asked for when a request names none: the config's and each implicit state's output
   * (the sequence batcher keeps those for the sequence's next request), or null (the model decides).
   */
  private readonly configOutputs: string[] | null;

  private constructor(private readonly opts: InstanceOptions) {
    this.modelName = opts.ctx.config.name ?? '';
    const outputs = (opts.ctx.config.output ?? []).map((o) => o.name ?? '');
    for (const state of opts.ctx.config.sequence_batching?.state ?? []) {
      const name = state.output_name ?? '';
      if (outputs.length > 0 && !outputs.includes(name)) outputs.push(name);
    }
    this.configOutputs = outputs.length > 0 ? outputs : null;
    this.metrics = new MetricBridge(opts.ctx.metrics, (type, header) => this.proc.send(type, header));
    this.open = new OpenRequests(opts.decoupled, this.modelName, (b, i) => this.proc.send(MSG.CANCEL, { b, i }));
    this.bls = new BlsBridge({
      infer: opts.ctx.infer,
      requestOf: (batch, index) => this.open.requestOf(batch + index),
      send: (type, header, blob) => this.proc.send(type, header, blob),
      shm: () => this.proc.shm,
    });
    this.control = new ModelControlBridge({
      models: opts.ctx.models,
      modelName: this.modelName,
      send: (type, header) => this.proc.send(type, header),
      shm: () => this.proc.shm,
    });
  }

  /** Starts the stub and runs `initialize`; rejects with the Python traceback when it fails. */
  static async start(opts: InstanceOptions): Promise<PythonModelInstance> {
    const instance = new PythonModelInstance(opts);
    await instance.boot();
    const pid = instance.proc.pid;
    const rss = pid === undefined ? undefined : await processRssBytes(pid);
    if (rss !== undefined && rss > 0) instance.memoryUsage = [{ type: 'CPU', id: 0, byteSize: rss }];
    return instance;
  }

  execute(items: ExecutionItem[], report: ReportExecution = ignoreExecution): Promise<void> {
    // Not an async function: the usual call sends at once and returns the batch's own promise.
    if (!this.readyNow || this.unloading) return this.executeWhenReady(items, report);
    return this.sendBatch(items, report);
  }

  private async executeWhenReady(items: ExecutionItem[], report: ReportExecution): Promise<void> {
    try {
      await this.ensureReady();
    } catch (e) {
      for (const item of items) item.sink.fail(toInferenceError(e));
      return;
    }
    return this.sendBatch(items, report);
  }

  /** Sends one EXECUTE frame; the promise settles when the stub has answered it (EXECUTE_DONE). */
  private sendBatch(items: ExecutionItem[], report: ReportExecution): Promise<void> {
    const startedAt = performance.now();
    const proc = this.proc;
    // The batch id is the key of its first request; request i is `batch + i` (see OpenRequests).
    const batch = this.nextKey;
    this.nextKey += items.length;
    const blob = new BlobBuilder();
    let writes: Promise<unknown>[] | undefined;
    const q = new Array<unknown[]>(items.length);
    for (let index = 0; index < items.length; index++) {
      const request = items[index].request;
      const { descs, pending } = encodeTensors(request.inputs, blob, proc.shm);
      if (pending) (writes ??= []).push(pending);
      q[index] = this.requestHeader(request, descs);
    }
    if (writes) {
      return Promise.all(writes).then(
        () => this.dispatch(proc, items, batch, q, blob, report, startedAt),
        (e: unknown) => {
          for (const item of items) item.sink.fail(InferenceError.internal(`cannot pass inputs to python model '${this.modelName}': ${toInferenceError(e).message}`));
        },
      );
    }
    return this.dispatch(proc, items, batch, q, blob, report, startedAt);
  }

  private dispatch(
    proc: StubProcess,
    items: ExecutionItem[],
    batch: number,
    q: unknown[][],
    blob: BlobBuilder,
    report: ReportExecution,
    startedAt: number,
  ): Promise<void> {
    for (let index = 0; index < items.length; index++) this.open.add(batch + index, batch, items[index]);
    return new Promise<void>((resolve) => {
      if (proc.isAlive) {
        // compute_input ends once the inputs are encoded, before the write that wakes the stub: in
        // Triton's python backend it ends once the inputs are in shared memory, and pushing the
        // message to the stub is part of compute_infer.
        const sentAt = performance.now();
        const open: OpenBatch = { items, done: resolve, report, inputMs: sentAt - startedAt, sentAt };
        this.batches.set(batch, open);
        proc.send(MSG.EXECUTE, [batch, q], blob);
        return;
      }
      this.open.failRange(InferenceError.unavailable(`python stub of model '${this.modelName}' is not running`), batch, items.length);
      resolve();
    });
  }

  async unload(): Promise<void> {
    this.unloading = true;
    await this.ready.catch(() => undefined);
    const proc = this.proc;
    if (proc.isAlive) {
      const finalized = new Promise<void>((resolve) => (this.finalized = resolve));
      proc.send(MSG.FINALIZE, {});
      await raceTimeout([finalized, proc.exited], FINALIZE_TIMEOUT_MS);
      await raceTimeout([proc.exited], 2_000);
      proc.kill();
    }
    this.bls.abortAll();
    this.open.failAll(InferenceError.unavailable(`model '${this.modelName}' was unloaded`));
    this.metrics.release();
    for (const b of this.batches.values()) b.done();
    this.batches.clear();
  }

  /**
   * `[id, correlation id, flags, parameters JSON, requested outputs or null, timeout µs, inputs,
   * trace context or null]` (see _nereid_ipc).
   */
  private requestHeader(r: InferenceRequest, descs: WireTensor[]): unknown[] {
    const out = r.outputs ? r.outputs.map((o) => o.name) : this.configOutputs;
    const flags = (r.sequenceStart ? 1 : 0) | (r.sequenceEnd ? 2 : 0);
    return [r.id, correlationId(r.sequenceId), flags, parametersJson(r.parameters), out, r.timeoutUs, descs, r.trace?.context ?? null];
  }

  private async ensureReady(): Promise<void> {
    if (this.unloading) throw InferenceError.unavailable(`model '${this.modelName}' is being unloaded`);
    if (this.readyFailed) this.boot();
    await this.ready;
  }

  /** Spawns a stub and initializes the model in it; `this.ready` tracks the outcome. */
  private boot(): Promise<void> {
    const spare = this.opts.spare;
    this.opts.spare = undefined;
    const onFrame = (frame: Frame): void => this.onFrame(proc, frame);
    let proc: StubProcess;
    if (spare?.isAlive) {
      proc = spare;
      proc.adopt(onFrame, this.opts.ctx.log);
    } else {
      proc = new StubProcess(this.opts.launch, this.opts.ctx.log, onFrame);
    }
    this.proc = proc;
    this.readyFailed = false;
    this.readyNow = false;
    this.ready = new Promise<void>((resolve, reject) => (this.initWaiter = { resolve, reject }));
    this.ready.catch(() => (this.readyFailed = true));
    void proc.exited.then((exit) => this.onExit(proc, exit));
    const { ctx, modelFile, decoupled } = this.opts;
    proc.send(MSG.INIT, {
      file: modelFile, modelDir: ctx.modelDir, versionDir: ctx.versionDir, instance: ctx.instance.name,
      model: this.modelName, decoupled, args: initArgs(ctx),
    });
    return this.ready;
  }

  private onExit(proc: StubProcess, exit: StubExit): void {
    if (proc !== this.proc) return;
    const what = `python stub of model '${this.modelName}' (instance '${this.opts.ctx.instance.name}') ${describeExit(exit)}`;
    if (this.initWaiter) {
      const stderr = proc.stderrText();
      this.initWaiter.reject(InferenceError.internal(`Failed to initialize Python stub: ${what}${stderr ? `\n${stderr}` : ''}`));
      this.initWaiter = undefined;
    }
    this.finalized?.();
    // What the dead stub's model created leaves the metrics (a restarted stub creates its own).
    this.metrics.release();
    if (this.unloading) return;
    // The requests the crash fails: their ids go on its line.
    const failed = this.open.requests();
    this.bls.abortAll();
    this.open.failAll(InferenceError.internal(`${what} while running requests; the stub is being restarted`));
    for (const b of this.batches.values()) b.done();
    this.batches.clear();
    if (!this.readyFailed) {
      this.opts.ctx.log('error', `${what}; restarting it`, failed);
      this.opts.ctx.metrics?.stubRestarted(this.modelName, this.opts.ctx.version);
      this.boot();
    }
  }

  private onFrame(proc: StubProcess, frame: Frame): void {
    if (proc !== this.proc) return;
    if (this.waiting > 0) {
      this.waiting++;
      this.chain = this.chain.then(() => this.handle(frame)).catch((e: unknown) => this.logError(e, frame)).finally(this.frameDone);
      return;
    }
    let later: void | Promise<void>;
    try {
      later = this.handle(frame);
    } catch (e) {
      return this.logError(e, frame);
    }
    if (!(later instanceof Promise)) return;
    this.waiting++;
    this.chain = later.catch((e: unknown) => this.logError(e, frame)).finally(this.frameDone);
  }

  /** A frame whose handling failed; a batch's answer or a response names the requests it was for. */
  private logError(e: unknown, frame: Frame): void {
    let requests: InferenceRequest[] | undefined;
    if (frame.type === MSG.EXECUTE_DONE) requests = this.requestsOf((frame.header as ExecuteDone)[0]);
    else if (frame.type === MSG.RESPONSE) {
      const [b, i] = frame.header as [number, number];
      const request = this.open.requestOf(b + i);
      requests = request ? [request] : undefined;
    }
    this.opts.ctx.log('error', `python backend: ${toInferenceError(e).message}`, requests);
  }
  private readonly frameDone = (): void => void this.waiting--;

  /** Handles one frame; returns a promise when it has to wait (later frames then wait for it). */
  private handle(frame: Frame): void | Promise<void> {
    switch (frame.type) {
      case MSG.EXECUTE_DONE:
        return this.onExecuteDone(frame.header as ExecuteDone, frame.blob);
      case MSG.RESPONSE: {
        const [b, i, final, entry] = frame.header as [number, number, boolean, WireResponse | null];
        return this.onResponse(b + i, entry, final, frame.blob);
      }
    }
    const h = frame.header as Record<string, unknown>;
    switch (frame.type) {
      case MSG.BLS_REQUEST:
        return this.bls.onRequest(h, frame.blob);
      case MSG.MODEL_CONTROL:
        return this.control.onRequest(h, frame.blob);
      case MSG.METRIC_REQUEST:
        this.metrics.onRequest(h as never);
        break;
      case MSG.BLS_CANCEL:
        this.bls.cancel(h.id as number);
        break;
      case MSG.LOG:
        this.opts.ctx.log(h.l as 'info' | 'warn' | 'error' | 'verbose', h.m as string, typeof h.b === 'number' ? this.requestsOf(h.b) : undefined);
        break;
      case MSG.READY:
        this.onReady(h);
        break;
      case MSG.FINALIZED:
        this.finalized?.();
        break;
    }
  }

  /**
   * The requests of batch `b` a log line written in its `execute` is about: the batch's, while the
   * stub has not answered it; then (a decoupled model's execute running on) those still open.
   * Padding rows (no request of a client) are left out.
   */
  private requestsOf(b: number): InferenceRequest[] {
    const items = this.batches.get(b)?.items ?? this.open.itemsOf(b);
    return items.filter((i) => !i.request.padding).map((i) => i.request);
  }

  private onReady(h: Record<string, unknown>): void {
    const waiter = this.initWaiter;
    this.initWaiter = undefined;
    if (!waiter) return;
    if (h.err === undefined) {
      this.readyNow = true;
      return waiter.resolve();
    }
    const instance = this.opts.ctx.instance.name;
    waiter.reject(InferenceError.internal(`Failed to initialize Python stub for model '${this.modelName}' (instance '${instance}'): ${h.tb as string}`));
    this.proc.kill();
  }

  /** `[batch, entries, skipped?]` or `[batch, error message]` (see _nereid_ipc). */
  private onExecuteDone([b, result, skipped]: ExecuteDone, blob: Uint8Array): void | Promise<void> {
    const batch = this.batches.get(b);
    if (!batch) return;
    this.batches.delete(b);
    const doneAt = performance.now();
    // The stub runs one batch at a time: one sent while another ran started when that one ended.
    const computeStart = Math.max(batch.sentAt, this.lastDoneAt);
    this.lastDoneAt = doneAt;
    if (typeof result === 'string') {
      this.open.failRange(InferenceError.internal(result), b, batch.items.length);
      batch.done();
      return;
    }
    // What the batch cost, once its answers are read: compute_input is encoding the inputs,
    // compute_infer the write to the stub and its turn (reading inputs, the model's execute,
    // writing outputs), compute_output reading the outputs here (not delivering them).
    this.readMs = 0;
    const reportBatch = (): void => {
      // Requests the stub dropped (cancelled before execute began) were not executed.
      const ran = skipped ? batch.items.filter((_, i) => !skipped.includes(i)) : batch.items;
      if (ran.length === 0) return;
      const outputNs = nanos(this.readMs);
      batch.report(ran, {
        execStart: computeStart - batch.inputMs,
        inputNs: nanos(batch.inputMs),
        inferNs: nanos(doneAt - computeStart),
        outputNs,
      });
    };
    if (result.some((entry) => Array.isArray(entry) && needsFileRead(entry[0]))) {
      return this.deliverAll(b, result, blob).then(reportBatch).finally(batch.done);
    }
    try {
      for (let i = 0; i < result.length; i++) {
        const entry = result[i];
        if (entry !== null) this.onResponse(b + i, entry, true, blob);
      }
      reportBatch();
    } finally {
      batch.done();
    }
  }

  private async deliverAll(b: number, entries: (WireResponse | null)[], blob: Uint8Array): Promise<void> {
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i];
      if (entry !== null) await this.onResponse(b + i, entry, true, blob);
    }
  }

  /** One response entry (null: only the final flag) for request `key`; a promise when outputs are in files. */
  private onResponse(key: number, wire: WireResponse | null, final: boolean, blob: Uint8Array): void | Promise<void> {
    const request = this.open.requestOf(key);
    if (!request) return;
    if (wire === null) {
      this.open.deliver(key, undefined, final);
      return;
    }
    if (!Array.isArray(wire)) {
      this.open.fail(key, errorFromWire(wire));
      return;
    }
    const [descs, params] = wire;
    const readStart = performance.now();
    if (needsFileRead(descs)) {
      return decodeTensors(descs, blob, this.proc.shm, request.inputs).then(
        (outputs) => {
          const response = makeResponse(request.id, this.modelName, this.opts.ctx.version, outputs, params);
          this.readMs += performance.now() - readStart;
          this.open.deliver(key, response, final);
        },
        (e: unknown) => this.open.fail(key, toInferenceError(e)),
      );
    }
    try {
      const outputs = decodeInlineTensors(descs, blob, request.inputs);
      const response = makeResponse(request.id, this.modelName, this.opts.ctx.version, outputs, params);
      this.readMs += performance.now() - readStart;
      this.open.deliver(key, response, final);
    } catch (e) {
      this.open.fail(key, toInferenceError(e));
    }
  }
}

/** A correlation id for the stub: a number, a string, or `[digits]` for an integer beyond 2^53. */
function correlationId(id: bigint | string): number | string | [string] {
  if (typeof id === 'string') return id;
  return id <= MAX_SAFE && id >= -MAX_SAFE ? Number(id) : [id.toString()];
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

async function raceTimeout(promises: Promise<unknown>[], ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  await Promise.race([...promises, timeout]);
  clearTimeout(timer);
}

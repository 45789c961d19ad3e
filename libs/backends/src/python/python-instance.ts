import { InferenceError, toInferenceError, type ExecutionItem } from '@nereid/protocol';
import type { LoadContext, ModelInstance } from '../backend';
import { BlsBridge } from './bls-bridge';
import { BlobBuilder, MSG, type Frame } from './frames';
import { initArgs } from './init-args';
import { OpenRequests } from './open-requests';
import { describeExit, StubProcess, type StubExit, type StubLaunch } from './stub-process';
import { errorFromWire, makeResponse, parametersJson, type WireResponse } from './wire-responses';
import { decodeInlineTensors, decodeTensors, encodeTensors, needsFileRead } from './wire-tensors';

const FINALIZE_TIMEOUT_MS = 30_000;

export interface InstanceOptions {
  ctx: LoadContext;
  launch: StubLaunch;
  /** Absolute path of the model file (`<version dir>/model.py`). */
  modelFile: string;
  decoupled: boolean;
}

interface Waiter {
  resolve: () => void;
  reject: (e: InferenceError) => void;
}

/** One model instance = one Python stub process, restarted (re-initialized) when it dies. */
export class PythonModelInstance implements ModelInstance {
  /**
   * Batches handed to the stub at once. The stub still runs one `execute` at a time, as Triton's
   * does; the second batch waits in its socket, so the stub reads it as soon as the first is done
   * instead of sleeping until the server has answered the first one and sent the next.
   */
  readonly concurrency = 2;
  private proc!: StubProcess;
  private ready: Promise<void> = Promise.resolve();
  private readyFailed = false;
  private initWaiter?: Waiter;
  private finalized?: () => void;
  private unloading = false;
  private nextBatch = 0;
  private chain: Promise<void> = Promise.resolve();
  private readonly batches = new Map<number, { keys: string[]; done: () => void }>();
  private readonly open: OpenRequests;
  private readonly bls: BlsBridge;
  private readonly modelName: string;

  private constructor(private readonly opts: InstanceOptions) {
    this.modelName = opts.ctx.config.name ?? '';
    this.open = new OpenRequests(opts.decoupled, this.modelName);
    this.bls = new BlsBridge({
      infer: opts.ctx.infer,
      send: (type, header, blob) => this.proc.send(type, header, blob),
      shm: () => this.proc.shm,
    });
  }

  /** Starts the stub and runs `initialize`; rejects with the Python traceback when it fails. */
  static async start(opts: InstanceOptions): Promise<PythonModelInstance> {
    const instance = new PythonModelInstance(opts);
    await instance.boot();
    return instance;
  }

  async execute(items: ExecutionItem[]): Promise<void> {
    try {
      await this.ensureReady();
    } catch (e) {
      for (const item of items) item.sink.fail(toInferenceError(e));
      return;
    }
    const proc = this.proc;
    const batch = ++this.nextBatch;
    const blob = new BlobBuilder();
    const writes: Promise<unknown>[] = [];
    const keys: string[] = [];
    const q = items.map((item, index) => {
      const { descs, pending } = encodeTensors(item.request.inputs, blob, proc.shm);
      if (pending) writes.push(pending);
      keys.push(OpenRequests.key(batch, index));
      return this.requestHeader(item, descs);
    });
    try {
      if (writes.length > 0) await Promise.all(writes);
    } catch (e) {
      for (const item of items) item.sink.fail(InferenceError.internal(`cannot pass inputs to python model '${this.modelName}': ${toInferenceError(e).message}`));
      return;
    }
    items.forEach((item, index) => this.open.add(keys[index], item, () => proc.send(MSG.CANCEL, { b: batch, i: index })));
    return new Promise<void>((resolve) => {
      this.batches.set(batch, { keys, done: resolve });
      if (proc.isAlive) return proc.send(MSG.EXECUTE, { b: batch, q }, blob);
      this.batches.delete(batch);
      this.open.failAll(InferenceError.unavailable(`python stub of model '${this.modelName}' is not running`), keys);
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
    for (const b of this.batches.values()) b.done();
    this.batches.clear();
  }

  private requestHeader(item: ExecutionItem, descs: object[]): object {
    const r = item.request;
    const configOutputs = (this.opts.ctx.config.output ?? []).map((o) => o.name ?? '');
    const out = r.outputs ? r.outputs.map((o) => o.name) : configOutputs.length > 0 ? configOutputs : null;
    const flags = (r.sequenceStart ? 1 : 0) | (r.sequenceEnd ? 2 : 0);
    const cid = typeof r.sequenceId === 'string' ? { cids: r.sequenceId } : { cidi: r.sequenceId.toString() };
    return { id: r.id, ...cid, fl: flags, p: parametersJson(r.parameters), out, to: r.timeoutUs, in: descs };
  }

  private async ensureReady(): Promise<void> {
    if (this.unloading) throw InferenceError.unavailable(`model '${this.modelName}' is being unloaded`);
    if (this.readyFailed) this.boot();
    await this.ready;
  }

  /** Spawns a stub and initializes the model in it; `this.ready` tracks the outcome. */
  private boot(): Promise<void> {
    const proc = new StubProcess(this.opts.launch, this.opts.ctx.log, (frame) => this.onFrame(proc, frame));
    this.proc = proc;
    this.readyFailed = false;
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
    if (this.unloading) return;
    this.bls.abortAll();
    this.open.failAll(InferenceError.internal(`${what} while running requests; the stub is being restarted`));
    for (const b of this.batches.values()) b.done();
    this.batches.clear();
    if (!this.readyFailed) {
      this.opts.ctx.log('error', `${what}; restarting it`);
      this.boot();
    }
  }

  private onFrame(proc: StubProcess, frame: Frame): void {
    if (proc !== this.proc) return;
    this.chain = this.chain
      .then(() => this.handle(frame))
      .catch((e: unknown) => this.opts.ctx.log('error', `python backend: ${toInferenceError(e).message}`));
  }

  private async handle(frame: Frame): Promise<void> {
    const h = frame.header;
    switch (frame.type) {
      case MSG.EXECUTE_DONE:
        return this.onExecuteDone(h, frame.blob);
      case MSG.RESPONSE:
        return this.onResponse(OpenRequests.key(h.b as number, h.i as number), h.r as WireResponse | undefined, h.f === true, frame.blob);
      case MSG.BLS_REQUEST:
        return this.bls.onRequest(h, frame.blob);
      case MSG.BLS_CANCEL:
        return this.bls.cancel(h.id as number);
      case MSG.LOG:
        return this.opts.ctx.log(h.l as 'info' | 'warn' | 'error' | 'verbose', h.m as string);
      case MSG.READY:
        return this.onReady(h);
      case MSG.FINALIZED:
        return this.finalized?.();
    }
  }

  private onReady(h: Record<string, unknown>): void {
    const waiter = this.initWaiter;
    this.initWaiter = undefined;
    if (!waiter) return;
    if (h.err === undefined) return waiter.resolve();
    const instance = this.opts.ctx.instance.name;
    waiter.reject(InferenceError.internal(`Failed to initialize Python stub for model '${this.modelName}' (instance '${instance}'): ${h.tb as string}`));
    this.proc.kill();
  }

  private async onExecuteDone(h: Record<string, unknown>, blob: Uint8Array): Promise<void> {
    const batch = this.batches.get(h.b as number);
    if (!batch) return;
    this.batches.delete(h.b as number);
    try {
      if (typeof h.e === 'string') {
        this.open.failAll(InferenceError.internal(h.e), batch.keys);
        return;
      }
      const entries = h.r as (WireResponse | null)[];
      for (let i = 0; i < entries.length; i++) {
        const entry = entries[i];
        if (entry !== null) await this.onResponse(batch.keys[i], entry, true, blob);
      }
    } finally {
      batch.done();
    }
  }

  private async onResponse(key: string, wire: WireResponse | undefined, final: boolean, blob: Uint8Array): Promise<void> {
    const request = this.open.requestOf(key);
    if (!request) return;
    if (wire?.err) return this.open.fail(key, errorFromWire(wire.err));
    if (!wire) return this.open.deliver(key, undefined, final);
    try {
      const descs = wire.o ?? [];
      const outputs = needsFileRead(descs) ? await decodeTensors(descs, blob, this.proc.shm, request.inputs) : decodeInlineTensors(descs, blob, request.inputs);
      this.open.deliver(key, makeResponse(request.id, this.modelName, this.opts.ctx.version, outputs, wire.p), final);
    } catch (e) {
      this.open.fail(key, toInferenceError(e));
    }
  }
}

async function raceTimeout(promises: Promise<unknown>[], ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  await Promise.race([...promises, timeout]);
  clearTimeout(timer);
}

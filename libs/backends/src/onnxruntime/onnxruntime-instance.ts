import { InferenceError, nanos, toInferenceError, type ExecutionItem } from '@nereid/protocol';
import { markReclaimable } from '@nereid/tensor';
import { ignoreExecution, type ModelInstance, type ReportExecution } from '../backend';
import type { MemoryUsage } from '../memory-usage';
import { buildFeeds, fetchesFor, groupCompatible, splitResponses, type BatchModel } from './batch';
import type { RunTensor } from './messages';
import type { RunTiming, SessionRunner } from './session-runner';
import { checkOrtBytes } from './tensor-convert';

/**
 * One instance of an ONNX model: turns a batch of requests into session runs (one per group of
 * shape-compatible requests, inputs joined along the batch dim) and answers each request.
 */
export class OnnxRuntimeInstance implements ModelInstance {
  /** Session runs so far (a batch of compatible requests is one run). */
  sessionRuns = 0;
  /**
   * Batches accepted at once. A worker-thread session gets its next batch queued while it runs the
   * current one. An event-loop session completes its runs from setImmediate callbacks, one event
   * loop turn per run; with a single slot, every request would wait a whole loop turn.
   */
  readonly concurrency: number;

  constructor(
    private readonly runner: SessionRunner,
    private readonly model: BatchModel,
    /** True when feeds must be fresh buffers (they are transferred to a worker thread). */
    private readonly copyInputs: boolean,
    /** What opening the session took (see ModelInstance.memoryUsage). */
    readonly memoryUsage: readonly MemoryUsage[] = [],
  ) {
    this.concurrency = copyInputs ? 2 : 8;
  }

  /**
   * Not an async function: an async function that returns the run's promise settles two microtask
   * turns after it (the promise is adopted through a thenable job), on every batch.
   */
  execute(items: ExecutionItem[], report: ReportExecution = ignoreExecution): Promise<void> {
    const accepted = items.filter((item) => this.checkRequestedOutputs(item) && this.checkInputs(item));
    const groups = groupCompatible(accepted, this.model.maxBatchSize > 0);
    if (groups.length === 1) return this.runGroup(groups[0], report);
    let chain = Promise.resolve();
    for (const group of groups) chain = chain.then(() => this.runGroup(group, report));
    return chain;
  }

  async unload(): Promise<void> {
    await this.runner.close();
  }

  /**
   * One session run for a group of requests, reported as one execution: compute_input is building
   * the feeds, compute_infer the run itself, compute_output splitting the outputs into responses.
   * The queue time ends where the feeds would have been built right before the run: feeds built
   * early (the run waited for the thread or the loop turn) count as waiting. Never rejects: a
   * failed run fails the group's requests.
   */
  private runGroup(items: ExecutionItem[], report: ReportExecution): Promise<void> {
    let run: Promise<RunTensor[]>;
    const timing: RunTiming = { start: 0, end: 0 };
    let inputMs: number;
    try {
      const t0 = performance.now();
      const fetches = fetchesFor(this.model, items);
      const feeds = buildFeeds(this.model, items, this.copyInputs);
      inputMs = performance.now() - t0;
      this.sessionRuns++;
      run = this.runner.run(feeds, fetches, { timing });
    } catch (e) {
      this.failAll(items, e);
      return Promise.resolve();
    }
    // A promise chain rather than an async function: one microtask fewer per run.
    return run.then(
      (outputs) => {
        try {
          const t2 = performance.now();
          // Every output is a fresh buffer of its own (onnxruntime-node copies it out of the run):
          // the front door may free it once the answer is sent (libs/tensor/src/reclaim.ts).
          for (let i = 0; i < outputs.length; i++) markReclaimable(outputs[i].data);
          const responses = splitResponses(this.model, items, outputs);
          const outputNs = nanos(performance.now() - t2);
          const execStart = timing.start - inputMs;
          report(items, { execStart, inputNs: nanos(inputMs), inferNs: nanos(timing.end - timing.start), outputNs });
          for (let i = 0; i < items.length; i++) items[i].sink.send(responses[i], true);
        } catch (e) {
          this.failAll(items, e);
        }
      },
      (e: unknown) => this.failAll(items, e),
    );
  }

  private failAll(items: readonly ExecutionItem[], e: unknown): void {
    const error = toInferenceError(e);
    for (const item of items) item.sink.fail(error);
  }

  /** Fails a request whose data onnxruntime-node would alter (alone: its batch runs); true when it may run. */
  private checkInputs(item: ExecutionItem): boolean {
    try {
      for (const t of item.request.inputs) checkOrtBytes(t, this.model.name);
      return true;
    } catch (e) {
      item.sink.fail(toInferenceError(e));
      return false;
    }
  }

  /** Fails a request that asks for an output the model does not have; true when it may run. */
  private checkRequestedOutputs(item: ExecutionItem): boolean {
    const unknown = item.request.outputs?.find((o) => !this.model.outputs.has(o.name));
    if (!unknown) return true;
    item.sink.fail(
      InferenceError.invalidArg(`unexpected inference output '${unknown.name}' for model '${this.model.name}'`),
    );
    return false;
  }
}

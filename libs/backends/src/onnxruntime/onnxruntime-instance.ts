import { InferenceError, toInferenceError, type ExecutionItem } from '@nereid/protocol';
import type { ModelInstance } from '../backend';
import { buildFeeds, fetchesFor, groupCompatible, splitResponses, type BatchModel } from './batch';
import type { RunTensor } from './messages';
import type { SessionRunner } from './session-runner';

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
  ) {
    this.concurrency = copyInputs ? 2 : 8;
  }

  /**
   * Not an async function: an async function that returns the run's promise settles two microtask
   * turns after it (the promise is adopted through a thenable job), on every batch.
   */
  execute(items: ExecutionItem[]): Promise<void> {
    const accepted = items.filter((item) => this.checkRequestedOutputs(item));
    const groups = groupCompatible(accepted, this.model.maxBatchSize > 0);
    if (groups.length === 1) return this.runGroup(groups[0]);
    let chain = Promise.resolve();
    for (const group of groups) chain = chain.then(() => this.runGroup(group));
    return chain;
  }

  async unload(): Promise<void> {
    await this.runner.close();
  }

  /** Never rejects: a failed run fails the group's requests. */
  private runGroup(items: ExecutionItem[]): Promise<void> {
    let run: Promise<RunTensor[]>;
    try {
      const fetches = fetchesFor(this.model, items);
      const feeds = buildFeeds(this.model, items, this.copyInputs);
      this.sessionRuns++;
      run = this.runner.run(feeds, fetches);
    } catch (e) {
      this.failAll(items, e);
      return Promise.resolve();
    }
    // A promise chain rather than an async function: one microtask fewer per run.
    return run.then(
      (outputs) => {
        try {
          const responses = splitResponses(this.model, items, outputs);
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

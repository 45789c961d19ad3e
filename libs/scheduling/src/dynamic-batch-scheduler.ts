import type { ModelConfig } from '@nereid/model-config';
import type { ExecutionItem, InferenceRequest } from '@nereid/protocol';
import { batchCompatible, batchRulesOf, formBatch, requestBatchSize, type BatchRules } from './batch-former';
import { systemClock } from './clock';
import { DeadlineTimer } from './deadline-timer';
import { InstancePool } from './instance-pool';
import { OrderedDelivery } from './ordered-delivery';
import { PriorityQueue } from './priority-queue';
import { cancelledError, queueFullError, stoppingError, timeoutExpiredError } from './rejections';
import { StopLatch } from './stop-latch';
import type { Clock, Scheduler, SchedulerOptions } from './types';

/**
 * Triton's dynamic batcher: requests wait in priority queues with their queue policies and are
 * combined into batches (see `formBatch`) when an instance can start them. While every instance is
 * busy the next batch keeps growing in the queue (its requests stay under their queue policies,
 * priorities and cancellation until it runs). A busy instance that pipelines (depth > 1) is handed
 * a batch ahead only where Triton prefetches (no queue policy: `allowsPrefetch`) and only a batch
 * that nothing queued later could join (`full`), so an early hand-over never makes batches smaller.
 * One timer wakes the batcher for the next queue-delay end or queue timeout. With `max_batch_size`
 * 0 every request runs alone but priorities and queue policies still apply.
 */
export class DynamicBatchScheduler implements Scheduler {
  private readonly queue: PriorityQueue;
  private readonly rules: BatchRules;
  private readonly pool: InstancePool;
  private readonly clock: Clock;
  private readonly ordering: OrderedDelivery | undefined;
  private readonly latch = new StopLatch();
  private readonly timer: DeadlineTimer;
  private pumping = false;
  private again = false;
  /**
   * While every instance is busy and only a pipelining slot is free: the head batch as last
   * scanned, when the whole queue was one compatible batch under max_batch_size (so not one to
   * hand over early). An enqueue then checks its own request against it instead of forming the
   * batch again over the whole queue (a scan per request, the queue's length squared per batch).
   */
  private growing: { first: InferenceRequest; count: number; size: number } | undefined;
  /** The request of the latest enqueue (the one `growing` has not seen yet). */
  private newest: InferenceRequest | undefined;

  constructor(config: ModelConfig, opts: SchedulerOptions) {
    const db = config.dynamic_batching ?? {};
    this.queue = new PriorityQueue(db);
    this.rules = batchRulesOf(config);
    this.clock = opts.clock ?? systemClock;
    this.timer = new DeadlineTimer(this.clock, () => this.pump());
    this.ordering = db.preserve_ordering === true ? new OrderedDelivery() : undefined;
    const depth = this.queue.allowsPrefetch ? (opts.depth ?? 1) : 1;
    this.pool = new InstancePool(opts.instanceCount, depth, opts.execute, () => this.pump());
  }

  get pendingCount(): number {
    return this.queue.size;
  }

  get inflightCount(): number {
    return this.pool.inflightCount;
  }

  enqueue(item: ExecutionItem): void {
    if (this.latch.stopping) {
      item.sink.fail(stoppingError(item.request));
      return;
    }
    const queued = this.queue.push(item, this.clock.now());
    if (queued === undefined) {
      item.sink.fail(queueFullError(item.request));
      return;
    }
    if (this.ordering !== undefined) queued.item = { ...item, sink: this.ordering.wrap(item.sink) };
    this.newest = item.request;
    this.pump();
  }

  stop(): Promise<void> {
    const p = this.latch.start();
    this.pump();
    return p;
  }

  /**
   * Rejects or delays timed-out requests, then hands batches to free instances. Nested calls
   * (sinks or executes that call back synchronously) make the running call loop again.
   */
  private pump(): void {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    let waitUntil = Infinity;
    try {
      do {
        this.again = false;
        waitUntil = this.pass(this.clock.now());
      } while (this.again);
    } finally {
      this.pumping = false;
    }
    this.timer.arm(this.queue.size > 0 ? Math.min(waitUntil, this.queue.nextDeadline) : Infinity);
    this.latch.check(this.queue.size === 0 && this.pool.inflightCount === 0);
  }

  /**
   * One scheduling pass; returns when the head batch wants to be looked at again (or Infinity).
   * Requests whose client went away leave the queue when a batch is about to be formed, as in
   * Triton: answered CANCELLED, never run.
   */
  private pass(now: number): number {
    const expired = this.queue.expire(now);
    if (expired.length > 0) this.growing = undefined;
    for (const q of expired) q.item.sink.fail(timeoutExpiredError());
    while (this.queue.size > 0 && this.pool.hasFree) {
      const idle = this.pool.hasIdle;
      // Busy: only a full batch may go ahead, and the head batch is known not to be one.
      if (!idle && this.stillGrowing()) break;
      this.growing = undefined;
      const cancelled = this.queue.removeCancelled();
      for (const q of cancelled) q.item.sink.fail(cancelledError(q.item.request));
      if (this.queue.size === 0) break;
      const decision = formBatch(this.queue.inOrder(), this.rules, now, this.latch.stopping);
      if (decision === undefined) break;
      // With every instance busy there is nothing to wake up for: the batch grows until one frees.
      if ('waitUntil' in decision) {
        if (idle) return decision.waitUntil;
        // A batch waits only when nothing blocked it: it is the whole queue.
        this.noteGrowing(this.queue.size);
        return Infinity;
      }
      if (!idle && !decision.full) {
        this.noteGrowing(decision.send);
        break;
      }
      this.pool.dispatch(this.queue.shiftN(decision.send).map((q) => q.item));
    }
    return Infinity;
  }

  /**
   * After a pass found the head batch not full while every instance is busy: when that batch is
   * the whole queue (nothing blocked it), remember it for `stillGrowing`.
   */
  private noteGrowing(batchCount: number): void {
    if (batchCount !== this.queue.size || this.rules.maxBatchSize === 0) return;
    let first: InferenceRequest | undefined;
    let size = 0;
    for (const q of this.queue.inOrder()) {
      first ??= q.item.request;
      size += requestBatchSize(q.item.request, this.rules);
    }
    if (first !== undefined && size < this.rules.maxBatchSize) this.growing = { first, count: this.queue.size, size };
  }

  /**
   * Whether the head batch is still not full: the queue is what `growing` saw plus, at most, the
   * newest request, which fits the batch (compatible, and the batch stays under max_batch_size).
   * Anything else (a request taken, cancelled or expired, a batch that would be full) is left to
   * `formBatch`. A request cancelled meanwhile only leaves the queue at the next formed batch, as
   * with any batch that is still growing.
   */
  private stillGrowing(): boolean {
    const g = this.growing;
    if (g === undefined) return false;
    if (this.queue.size === g.count) return true;
    const newest = this.newest;
    if (this.queue.size !== g.count + 1 || newest === undefined || !batchCompatible(g.first, newest, this.rules)) return false;
    const size = g.size + requestBatchSize(newest, this.rules);
    if (size >= this.rules.maxBatchSize) return false;
    g.count++;
    g.size = size;
    return true;
  }
}

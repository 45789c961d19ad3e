import type { ModelConfig } from '@nereid/model-config';
import type { ExecutionItem } from '@nereid/protocol';
import { batchRulesOf, formBatch, type BatchRules } from './batch-former';
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
    for (const q of this.queue.expire(now)) q.item.sink.fail(timeoutExpiredError());
    while (this.queue.size > 0 && this.pool.hasFree) {
      for (const q of this.queue.removeCancelled()) q.item.sink.fail(cancelledError(q.item.request));
      if (this.queue.size === 0) break;
      const idle = this.pool.hasIdle;
      const decision = formBatch(this.queue.inOrder(), this.rules, now, this.latch.stopping);
      if (decision === undefined) break;
      // With every instance busy there is nothing to wake up for: the batch grows until one frees.
      if ('waitUntil' in decision) return idle ? decision.waitUntil : Infinity;
      if (!idle && !decision.full) break;
      this.pool.dispatch(this.queue.shiftN(decision.send).map((q) => q.item));
    }
    return Infinity;
  }
}

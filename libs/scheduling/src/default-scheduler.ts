import { isCancelled, type ExecutionItem } from '@nereid/protocol';
import { Deque } from './deque';
import { InstancePool } from './instance-pool';
import { cancelledError, stoppingError } from './rejections';
import { StopLatch } from './stop-latch';
import type { Scheduler, SchedulerOptions } from './types';

/**
 * Triton's default scheduler: every request runs alone on a free instance; when all instances are
 * busy, requests wait in one FIFO queue. A request whose client has gone away while it waited is
 * answered CANCELLED instead of being run.
 */
export class DefaultScheduler implements Scheduler {
  private readonly queue = new Deque<ExecutionItem>();
  private readonly pool: InstancePool;
  private readonly latch = new StopLatch();
  private pumping = false;

  constructor(opts: SchedulerOptions) {
    // No queue policy here, so an instance may queue a second request as Triton prefetches.
    this.pool = new InstancePool(opts.instanceCount, opts.depth ?? 1, opts.execute, () => this.pump());
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
    this.queue.push(item);
    this.pump();
  }

  stop(): Promise<void> {
    const p = this.latch.start();
    this.pump();
    return p;
  }

  /** Hands queued requests to free instances. Not re-entrant: a nested call (an execute that
   * fails synchronously frees its instance at once) is absorbed by the running loop. */
  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.pool.hasFree && this.queue.size > 0) {
        const item = this.queue.shift() as ExecutionItem;
        if (isCancelled(item.request)) item.sink.fail(cancelledError(item.request));
        else this.pool.dispatch([item]);
      }
    } finally {
      this.pumping = false;
    }
    this.latch.check(this.queue.size === 0 && this.pool.inflightCount === 0);
  }
}

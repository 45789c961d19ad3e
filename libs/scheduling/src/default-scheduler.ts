import type { ExecutionItem } from '@nereid/protocol';
import { Deque } from './deque';
import { InstancePool } from './instance-pool';
import { stoppingError } from './rejections';
import { StopLatch } from './stop-latch';
import type { Scheduler, SchedulerOptions } from './types';

/**
 * Triton's default scheduler: every request runs alone on a free instance; when all instances are
 * busy, requests wait in one FIFO queue.
 */
export class DefaultScheduler implements Scheduler {
  private readonly queue = new Deque<ExecutionItem>();
  private readonly pool: InstancePool;
  private readonly latch = new StopLatch();
  private pumping = false;

  constructor(opts: SchedulerOptions) {
    this.pool = new InstancePool(opts.instanceCount, opts.execute, () => this.pump());
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
        this.pool.dispatch([this.queue.shift() as ExecutionItem]);
      }
    } finally {
      this.pumping = false;
    }
    this.latch.check(this.queue.size === 0 && this.pool.inflightCount === 0);
  }
}

/**
 * The batches a worker has been handed for one instance of a model: up to `depth` run at once
 * (the instance's own concurrency), the rest wait and start in arrival order as running ones end.
 *
 * Schedulers keep many batches in flight per instance (CLUSTER_PIPELINE_DEPTH) so that an instance
 * never idles for a Redis round trip. The batches that can start together start in the same turn
 * of the event loop, where an event-loop ONNX session runs them back to back and their answers go
 * to Redis in one pipeline; a chain of one batch per turn after the first `depth` cost a turn (and
 * a write to Redis) per batch, and was slower the more batches were in flight.
 */
export class InstanceLane {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private drainWaiters: Array<() => void> = [];

  constructor(private readonly depth: number) {}

  /** Batches running or waiting here. */
  get load(): number {
    return this.running + this.waiting.length;
  }

  /** Runs `task` once fewer than `depth` tasks run; settles as it does. */
  run(task: () => Promise<void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const start = (): void => {
        this.running++;
        let p: Promise<void>;
        try {
          p = task();
        } catch (e) {
          p = Promise.reject(e);
        }
        p.then(resolve, reject).finally(() => {
          this.running--;
          this.next();
        });
      };
      if (this.running < Math.max(1, this.depth)) start();
      else this.waiting.push(start);
    });
  }

  /** Resolves once nothing runs or waits here. */
  drained(): Promise<void> {
    if (this.load === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.drainWaiters.push(resolve));
  }

  private next(): void {
    while (this.running < Math.max(1, this.depth) && this.waiting.length > 0) this.waiting.shift()!();
    if (this.load === 0 && this.drainWaiters.length > 0) {
      const waiters = this.drainWaiters;
      this.drainWaiters = [];
      for (const w of waiters) w();
    }
  }
}

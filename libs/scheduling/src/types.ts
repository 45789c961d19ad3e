import type { ExecutionItem } from '@nereid/protocol';
import type { EnsembleServices } from './ensemble-run';

/** Time source and timers, injected so that schedulers can be tested with a fake clock. */
export interface Clock {
  /** Milliseconds on a monotonic scale. */
  now(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

/** Runs a batch on instance `instance` (0..instanceCount-1); resolves when that instance is free again. */
export type ExecuteBatch = (instance: number, items: ExecutionItem[]) => Promise<void>;

/** Triton's scheduler contract: requests go in, batches go to instances. */
export interface Scheduler {
  /** Queues a request; rejections (queue full, timeout, cancelled, stopping) go to `item.sink.fail`. */
  enqueue(item: ExecutionItem): void;
  /** Requests queued and not yet handed to an instance. */
  readonly pendingCount: number;
  /** Requests handed to an instance whose batch has not finished. */
  readonly inflightCount: number;
  /** Waits for queued + running work; new work is rejected with UNAVAILABLE from the call on. */
  stop(options?: StopOptions): Promise<void>;
  /** Sequence batcher only: slots owned by a live sequence, over all instances. */
  readonly sequenceSlotsInUse?: number;
  /** Sequence batcher only: whether a live sequence has this correlation id here. */
  hasSequence?(sequenceId: bigint | string): boolean;
}

export interface StopOptions {
  /**
   * Sequence batcher: also wait until every live sequence has ended or idled out, taking their
   * requests meanwhile (a reload: another runtime took the new sequences). Default false.
   */
  sequences?: boolean;
}

export interface SchedulerOptions {
  /** Number of model instances; batches run on 0..instanceCount-1. */
  instanceCount: number;
  /**
   * Batches one instance accepts at once (default 1). An instance that queues the next batch while
   * it runs one takes more; a scheduler uses that only where handing work over early changes
   * nothing the client sees: the default scheduler always (no batches, no queue policy), the
   * dynamic batcher where Triton would prefetch (`allowsPrefetch`) and only for batches that could
   * not grow anyway. A request handed over early no longer waits where its queue timeout, priority
   * and cancellation apply, and a batch handed over early stops growing.
   */
  depth?: number;
  execute: ExecuteBatch;
  /** Default: `systemClock` (performance.now + setTimeout). */
  clock?: Clock;
  /** The model's folder: the sequence batcher reads initial state data files from its `initial_state/`. */
  modelDir?: string;
  /** What an ensemble's scheduler calls its steps with; required for `platform: "ensemble"`. */
  ensemble?: EnsembleServices;
}

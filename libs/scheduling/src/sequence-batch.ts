import type { BatchRules } from './batch-former';
import type { SequenceRows } from './sequence-rows';
import type { SequenceSlots, SlotEntry } from './sequence-slots';
import type { Clock, ExecuteBatch } from './types';

/** What the per-instance batchers of one sequence batcher share. */
export interface SequenceBatchContext {
  rows: SequenceRows;
  /** The sequence table: batchers give slots back to it. */
  slots: SequenceSlots;
  execute: ExecuteBatch;
  clock: Clock;
  rules: BatchRules;
  /** Whether the scheduler is stopping: nothing waits for a fuller batch then. */
  stopping(): boolean;
  /** A request finished or left the batcher: the scheduler may have drained. */
  changed(): void;
}

/** The per-instance batcher of one sequence strategy. */
export interface SequenceBatch {
  enqueue(slot: number, entry: SlotEntry): void;
  readonly pendingCount: number;
  readonly inflightCount: number;
  /** Runs what waits for a fuller batch now (stopping). */
  flush(): void;
  /** Clears timers. */
  dispose(): void;
}

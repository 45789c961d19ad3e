import type { ModelConfig } from '@nereid/model-config';
import { isCancelled, type ExecutionItem } from '@nereid/protocol';
import { Deque } from './deque';
import { DynamicBatchScheduler } from './dynamic-batch-scheduler';
import type { SequenceBatch, SequenceBatchContext } from './sequence-batch';
import type { SlotState } from './sequence-rows';
import { RELEASE, type SequenceKey, type SlotEntry } from './sequence-slots';

/**
 * The oldest strategy on one instance (Triton's OldestSequenceBatch): the instance holds up to
 * `max_candidate_sequences` candidate sequences, one per slot. The front request of each candidate
 * goes to a dynamic batcher of the instance (`preferred_batch_size`, `max_queue_delay_microseconds`,
 * `preserve_ordering` of the `oldest` settings), and the next request of that sequence only once
 * the previous one is complete: a batch holds at most one request per sequence, the requests of a
 * sequence run in order, and each sees the state its predecessor left.
 */
export class OldestSequenceBatch implements SequenceBatch {
  private readonly queues: Deque<SlotEntry>[];
  private readonly inFlight: boolean[];
  private readonly states: SlotState[];
  /** Per slot: its request is complete, the slot's next one may go (built once, not per request). */
  private readonly onDone: (() => void)[];
  private readonly batcher: DynamicBatchScheduler;
  private markers = 0;

  constructor(
    private readonly instance: number,
    private readonly ctx: SequenceBatchContext,
    config: ModelConfig,
  ) {
    // Grown as slots are first used (SequenceSlots hands them out lowest first), never made up to the slot count.
    this.queues = [];
    this.inFlight = [];
    this.states = [];
    this.onDone = [];
    const oldest = config.sequence_batching?.oldest ?? {};
    const batching: ModelConfig = {
      name: config.name,
      max_batch_size: config.max_batch_size,
      input: config.input,
      dynamic_batching: {
        preferred_batch_size: oldest.preferred_batch_size,
        max_queue_delay_microseconds: oldest.max_queue_delay_microseconds,
        preserve_ordering: oldest.preserve_ordering,
      },
    };
    this.batcher = new DynamicBatchScheduler(batching, {
      instanceCount: 1,
      execute: (_i, items) => ctx.execute(instance, items),
      clock: ctx.clock,
    });
  }

  get pendingCount(): number {
    let n = 0;
    for (const q of this.queues) n += q.size;
    return n - this.markers + this.batcher.pendingCount;
  }

  get inflightCount(): number {
    return this.batcher.inflightCount;
  }

  enqueue(slot: number, entry: SlotEntry): void {
    while (this.queues.length <= slot) {
      const made = this.queues.length;
      this.queues.push(new Deque<SlotEntry>());
      this.inFlight.push(false);
      this.states.push({ values: undefined });
      this.onDone.push(() => this.next(made));
    }
    this.queues[slot].push(entry);
    if (entry === RELEASE) this.markers++;
    if (!this.inFlight[slot]) this.next(slot);
  }

  flush(): void {
    // The dynamic batcher sends what it holds when its delay ends; nothing waits here.
  }

  dispose(): void {
    void this.batcher.stop();
  }

  /**
   * The slot's previous request is complete (or there was none): hands its next request to the
   * dynamic batcher, or gives the slot back when the sequence has ended, was force-ended by the
   * reaper or was cancelled. A slot given to a backlogged sequence goes on with its requests.
   */
  private next(slot: number): void {
    const q = this.queues[slot];
    for (;;) {
      this.inFlight[slot] = false;
      let issue: ExecutionItem | undefined;
      let release = false;
      let cancelled: SequenceKey | undefined;
      const front = q.size > 0 ? q.at(0) : undefined;
      if (front === RELEASE) {
        q.shift();
        this.markers--;
        release = true;
      } else if (front !== undefined && isCancelled(front.item.request)) {
        // Left in the queue: the release answers it CANCELLED with the rest of the sequence.
        release = true;
        cancelled = front.item.request.sequenceId;
      } else if (front !== undefined) {
        q.shift();
        release = front.item.request.sequenceEnd;
        issue = this.ctx.rows.row(front.item, this.states[slot], this.onDone[slot]);
        this.inFlight[slot] = true;
      }
      let again = false;
      if (release) {
        this.states[slot].values = undefined;
        const taken = this.ctx.slots.release({ instance: this.instance, slot }, q, cancelled);
        again = taken !== undefined && !this.inFlight[slot];
      }
      // Last: the batcher may run the request and complete it before enqueue returns.
      if (issue !== undefined) this.batcher.enqueue(issue);
      if (!again) break;
    }
    this.ctx.changed();
  }
}

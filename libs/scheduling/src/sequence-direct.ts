import { isCancelled, toInferenceError, type ExecutionItem, type InferenceRequest } from '@nereid/protocol';
import type { Tensor } from '@nereid/tensor';
import { batchCompatible } from './batch-former';
import { DeadlineTimer } from './deadline-timer';
import { Deque } from './deque';
import { GuardedSink } from './guarded-sink';
import type { SequenceBatch, SequenceBatchContext } from './sequence-batch';
import type { SlotState } from './sequence-rows';
import { RELEASE, type QueuedRow, type SequenceKey, type SlotEntry } from './sequence-slots';

/**
 * The direct strategy on one instance (Triton's DirectSequenceBatch): each sequence owns one slot
 * for its life. When the instance is free, one execution takes the front request of every ready
 * slot, as rows 0 up to the highest ready slot: a slot between them with nothing ready (or a request
 * that cannot share the batch) gets a padding row with READY false. With
 * `minimum_slot_utilization` and `max_queue_delay_microseconds` both set, the execution waits until
 * that fraction of the slots is ready or the oldest front request has waited that long; otherwise it
 * runs as soon as one slot is ready. One execution at a time: a sequence's next request needs the
 * state its previous one left.
 */
export class DirectSequenceBatch implements SequenceBatch {
  private readonly queues: Deque<SlotEntry>[];
  /** The sequence each slot serves (undefined: free). */
  private readonly owners: (SequenceKey | undefined)[];
  private readonly states: SlotState[];
  private maxActive = -1;
  private markers = 0;
  private running = 0;
  private busy = false;
  private pumping = false;
  private again = false;
  private readonly timer: DeadlineTimer;

  constructor(
    private readonly instance: number,
    private readonly slotCount: number,
    private readonly ctx: SequenceBatchContext,
    private readonly delayMs: number,
    private readonly minUtilization: number,
  ) {
    // Grown as slots are first used (SequenceSlots hands them out lowest first), never made up to slotCount.
    this.queues = [];
    this.timer = new DeadlineTimer(ctx.clock, () => this.pump());
    this.owners = [];
    this.states = [];
  }

  get pendingCount(): number {
    let n = 0;
    for (let s = 0; s <= this.maxActive; s++) n += this.queues[s].size;
    return n - this.markers;
  }

  get inflightCount(): number {
    return this.running;
  }

  enqueue(slot: number, entry: SlotEntry): void {
    while (this.queues.length <= slot) {
      this.queues.push(new Deque<SlotEntry>());
      this.owners.push(undefined);
      this.states.push({ values: undefined });
    }
    this.queues[slot].push(entry);
    if (entry === RELEASE) this.markers++;
    else this.owners[slot] = entry.item.request.sequenceId;
    this.maxActive = Math.max(this.maxActive, slot);
    this.pump();
  }

  flush(): void {
    this.pump();
  }

  dispose(): void {
    this.timer.clear();
  }

  private pump(): void {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.again = false;
        if (!this.busy) this.pass();
      } while (this.again);
    } finally {
      this.pumping = false;
    }
  }

  /** Frees slots whose sequence ended early, then forms and starts one execution if it should run. */
  private pass(): void {
    let live: InferenceRequest | undefined;
    let maxSlot = -1;
    let earliest = Infinity;
    let ready = 0;
    for (let s = 0; s <= this.maxActive; s++) {
      const q = this.queues[s];
      const front = q.size > 0 ? q.at(0) : undefined;
      if (front === RELEASE) {
        q.shift();
        this.markers--;
        this.releaseSlot(s);
      } else if (front !== undefined && isCancelled(front.item.request)) {
        this.releaseSlot(s, front.item.request.sequenceId);
      }
      if (q.size === 0) continue;
      const row = q.at(0) as QueuedRow;
      live ??= row.item.request;
      earliest = Math.min(earliest, row.enqueuedAt);
      ready++;
      maxSlot = s;
    }
    this.shrink();
    if (live === undefined) {
      this.timer.clear();
      this.ctx.changed();
      return;
    }
    if (this.delayMs > 0 && this.minUtilization > 0 && !this.ctx.stopping()) {
      const now = this.ctx.clock.now();
      if (now - earliest < this.delayMs && ready / this.slotCount < this.minUtilization) {
        this.timer.arm(earliest + this.delayMs);
        return;
      }
    }
    this.timer.clear();
    this.run(this.collect(maxSlot, live));
  }

  /**
   * Rows 0..maxSlot: each slot's front request, or a padding placeholder (undefined) where the slot
   * has none or its request cannot share the batch (other non-batch shapes of its inputs or states):
   * that request waits for the next execution.
   */
  private collect(maxSlot: number, live: InferenceRequest): (ExecutionItem | undefined)[] {
    const rows: (ExecutionItem | undefined)[] = [];
    let first: ExecutionItem | undefined;
    for (let s = 0; s <= maxSlot; s++) {
      const q = this.queues[s];
      const front = q.size > 0 ? q.at(0) : undefined;
      if (
        front === undefined ||
        front === RELEASE ||
        !batchCompatible(live, front.item.request, this.ctx.rules) ||
        (first !== undefined && !this.ctx.rows.statesFit(first, front.item.request, this.states[s]))
      ) {
        rows.push(undefined);
        continue;
      }
      q.shift();
      const row = this.ctx.rows.row(front.item, this.states[s]);
      first ??= row;
      rows.push(row);
      if (front.item.request.sequenceEnd) this.releaseSlot(s);
    }
    this.shrink();
    return rows;
  }

  private run(rows: (ExecutionItem | undefined)[]): void {
    const template = rows.find((r) => r !== undefined) as ExecutionItem;
    const real: GuardedSink[] = [];
    // Made for the first padding row only: a full batch needs none.
    let zeros: Map<Tensor, Tensor> | undefined;
    const items = rows.map((r) => {
      if (r === undefined) return this.ctx.rows.padding(template, (zeros ??= new Map()));
      // The row is this batcher's own object (SequenceRows.row): guarded in place, not copied.
      const sink = new GuardedSink(r.sink);
      real.push(sink);
      r.sink = sink;
      return r;
    });
    this.busy = true;
    this.running = real.length;
    let done: Promise<void>;
    try {
      done = this.ctx.execute(this.instance, items);
    } catch (e) {
      done = Promise.reject(e);
    }
    done.then(
      () => this.finished(),
      (e: unknown) => {
        const error = toInferenceError(e);
        for (const sink of real) if (!sink.done) sink.fail(error);
        this.finished();
      },
    );
  }

  private finished(): void {
    this.busy = false;
    this.running = 0;
    this.pump();
    this.ctx.changed();
  }

  /** Gives the slot back (its state goes with the sequence: the next one starts with START). */
  private releaseSlot(slot: number, cancelled?: SequenceKey): void {
    this.states[slot].values = undefined;
    this.owners[slot] = this.ctx.slots.release({ instance: this.instance, slot }, this.queues[slot], cancelled);
  }

  /** Lowers `maxActive` past slots that serve no sequence. */
  private shrink(): void {
    while (this.maxActive >= 0 && this.owners[this.maxActive] === undefined && this.queues[this.maxActive].size === 0) this.maxActive--;
  }
}

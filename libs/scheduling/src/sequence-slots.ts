import { isCancelled, SequenceBatcherErrors as Errors, type ExecutionItem, type InferenceError } from '@nereid/protocol';
import { Deque } from './deque';
import { DeadlineTimer } from './deadline-timer';
import { cancelledError } from './rejections';
import { sequenceIdText } from './sequence-request';
import { SlotHeap, type SlotRef } from './slot-heap';
import type { Clock } from './types';

/** A correlation id as a map key: a UINT64 id (bigint) and a STRING id never collide. */
export type SequenceKey = bigint | string;

/** A client request waiting in a slot or in the backlog. */
export interface QueuedRow {
  item: ExecutionItem;
  /** Clock time the scheduler accepted it (ms). */
  enqueuedAt: number;
}

/** Put in a slot's queue by the idle reaper: free the slot once the rows before it have run. */
export const RELEASE = Symbol('release');

export type SlotEntry = QueuedRow | typeof RELEASE;

/** A sequence that found no free slot: its requests, in order, until a slot frees. */
interface Backlog {
  key: SequenceKey;
  rows: QueuedRow[];
  /** Clock time a request timeout of the sequence expires (Infinity: none). */
  expiresAt: number;
}

/** How often an idle sequence still in the backlog is looked at again (Triton: 50 ms). */
const BACKLOG_IDLE_RECHECK_MS = 50;

/**
 * The sequence table of the sequence batcher (Triton's SequenceBatchScheduler::Enqueue, the
 * reaper and ReleaseSequenceSlot): which sequence owns which slot, the FIFO backlog of sequences
 * that found none, the idle reaper (`max_sequence_idle_microseconds`) and the backlog's request
 * timeouts. Free slots are handed out lowest slot number first, so new sequences spread over the
 * instances. The per-instance batchers receive rows through `deliver` and give slots back with
 * `release`.
 */
export class SequenceSlots {
  private readonly free: SlotHeap;
  private readonly assigned = new Map<SequenceKey, SlotRef>();
  private readonly backlogged = new Map<SequenceKey, Backlog>();
  private readonly backlogs = new Deque<Backlog>();
  /** Clock time of each live sequence's latest request. */
  private readonly lastSeen = new Map<SequenceKey, number>();
  private readonly total: number;
  /**
   * Slots are made as sequences first need them, lowest first (slot-major across instances): the
   * next never-used one is number `fresh` in that order. Made up front, a config's max_batch_size
   * of 5 M (a repository load may carry the config) took 690 MiB and 1.4 s, and 2^31 - 1 the process.
   */
  private fresh = 0;
  private readonly instances: number;
  private backlogRows = 0;
  private idleCheckAt = Infinity;
  private backlogExpiry = Infinity;
  private readonly timer: DeadlineTimer;

  constructor(
    instances: number,
    slotsPerInstance: number,
    private readonly idleMs: number,
    private readonly clock: Clock,
    private readonly deliver: (ref: SlotRef, entry: SlotEntry) => void,
    /** Called after the backlog lost requests to their timeout (the scheduler may have drained). */
    private readonly changed: () => void = () => undefined,
  ) {
    this.total = instances * slotsPerInstance;
    this.instances = instances;
    this.timer = new DeadlineTimer(clock, () => this.onTimer());
    this.free = new SlotHeap(instances);
  }

  /** The lowest free slot: a released one (all lower than any never used), else the next fresh one. */
  private takeFree(): SlotRef | undefined {
    const ref = this.free.pop();
    if (ref !== undefined || this.fresh >= this.total) return ref;
    const code = this.fresh++;
    return { instance: code % this.instances, slot: Math.floor(code / this.instances) };
  }

  /** Slots owned by a sequence (or being drained by one that ended). */
  /** Whether the sequence `key` holds a slot or waits in the backlog. */
  has(key: SequenceKey): boolean {
    return this.assigned.has(key) || this.backlogged.has(key);
  }

  get inUse(): number {
    return this.fresh - this.free.size;
  }

  /** Sequences waiting in the backlog. */
  get backlogSequences(): number {
    return this.backlogs.size;
  }

  /** Requests waiting in the backlog. */
  get backlogRequests(): number {
    return this.backlogRows;
  }

  /**
   * Routes a checked request to its sequence's slot, a free slot (START) or the backlog. Returns
   * the error for a request that starts nothing and belongs to no live sequence, or a new sequence
   * while `stopping`.
   */
  route(item: ExecutionItem, stopping: boolean): InferenceError | undefined {
    const request = item.request;
    const key = request.sequenceId;
    const start = request.sequenceStart;
    const end = request.sequenceEnd;
    if (stopping && start) return Errors.stopping();
    let ref = this.assigned.get(key);
    const backlog = ref === undefined ? this.backlogged.get(key) : undefined;
    if (!start && ref === undefined && backlog === undefined) return Errors.startRequired(sequenceIdText(key), request.modelName);
    const now = this.clock.now();
    this.touch(key, now);
    // A START on a live id continues in that id's slot or backlog: the old sequence ends there early.
    const row: QueuedRow = { item, enqueuedAt: now };
    if (backlog !== undefined) {
      this.addToBacklog(backlog, row, now);
      if (end) this.forget(key, this.backlogged);
      return undefined;
    }
    if (ref === undefined) {
      ref = this.takeFree();
      if (ref === undefined) {
        const fresh: Backlog = { key, rows: [], expiresAt: Infinity };
        this.backlogs.push(fresh);
        this.addToBacklog(fresh, row, now);
        if (!end) this.backlogged.set(key, fresh);
        else this.lastSeen.delete(key);
        return undefined;
      }
      this.assigned.set(key, ref);
    }
    if (end) this.forget(key, this.assigned);
    this.deliver(ref, row);
    return undefined;
  }

  /**
   * Gives a slot back once its sequence has ended, was force-ended by the reaper or was cancelled
   * (`cancelled`: the key of a sequence whose client went away). Rows left in `queue` are answered
   * CANCELLED. The oldest backlogged sequence then takes the slot: its rows are moved into `queue`
   * and its key returned (a backlogged sequence with a cancelled request is cancelled whole).
   * Otherwise the slot is free again and undefined is returned.
   */
  release(ref: SlotRef, queue: Deque<SlotEntry>, cancelled?: SequenceKey): SequenceKey | undefined {
    if (cancelled !== undefined) {
      if (sameSlot(this.assigned.get(cancelled), ref)) this.assigned.delete(cancelled);
      this.lastSeen.delete(cancelled);
    }
    failCancelled(drain(queue));
    for (;;) {
      const backlog = this.backlogs.shift();
      if (backlog === undefined) break;
      this.backlogRows -= backlog.rows.length;
      const last = backlog.rows[backlog.rows.length - 1];
      const seqCancelled = backlog.rows.some((r) => isCancelled(r.item.request));
      if (!last.item.request.sequenceEnd) {
        if (this.backlogged.get(backlog.key) === backlog) this.backlogged.delete(backlog.key);
        if (!seqCancelled) this.assigned.set(backlog.key, ref);
      }
      if (seqCancelled) {
        failCancelled(backlog.rows);
        continue;
      }
      for (const row of backlog.rows) queue.push(row);
      this.recomputeBacklogExpiry();
      return backlog.key;
    }
    this.recomputeBacklogExpiry();
    this.free.push(ref);
    return undefined;
  }

  /** Clears the timer (the scheduler has stopped). */
  dispose(): void {
    this.timer.clear();
  }

  private addToBacklog(backlog: Backlog, row: QueuedRow, now: number): void {
    backlog.rows.push(row);
    this.backlogRows++;
    const timeoutUs = row.item.request.timeoutUs;
    if (timeoutUs > 0) {
      backlog.expiresAt = Math.min(backlog.expiresAt, now + timeoutUs / 1000);
      if (backlog.expiresAt < this.backlogExpiry) {
        this.backlogExpiry = backlog.expiresAt;
        this.arm();
      }
    }
  }

  /** The sequence has sent its END: later requests with its id need a START. */
  private forget(key: SequenceKey, map: Map<SequenceKey, unknown>): void {
    map.delete(key);
    this.lastSeen.delete(key);
  }

  private touch(key: SequenceKey, now: number): void {
    this.lastSeen.set(key, now);
    if (this.idleCheckAt === Infinity) {
      this.idleCheckAt = now + this.idleMs;
      this.arm();
    }
  }

  private arm(): void {
    this.timer.arm(Math.min(this.idleCheckAt, this.backlogExpiry));
  }

  private onTimer(): void {
    const now = this.clock.now();
    const forced = now >= this.idleCheckAt ? this.reap(now) : [];
    if (now >= this.backlogExpiry) this.expireBacklogs(now);
    this.arm();
    for (const ref of forced) this.deliver(ref, RELEASE);
  }

  /** Ends the sequences idle for `max_sequence_idle_microseconds`; returns the slots to free. */
  private reap(now: number): SlotRef[] {
    const forced: SlotRef[] = [];
    let next = Infinity;
    for (const [key, seen] of this.lastSeen) {
      const expires = seen + this.idleMs;
      if (expires > now) {
        next = Math.min(next, expires);
        continue;
      }
      const ref = this.assigned.get(key);
      if (ref !== undefined) {
        this.assigned.delete(key);
        this.lastSeen.delete(key);
        forced.push(ref);
      } else if (this.backlogged.has(key)) {
        // Still waiting for a slot: not idle on its own account; looked at again soon.
        next = Math.min(next, now + BACKLOG_IDLE_RECHECK_MS);
      } else {
        this.lastSeen.delete(key);
      }
    }
    this.idleCheckAt = next;
    return forced;
  }

  /** Fails the backlogged sequences whose request timeout has passed, every request of each. */
  private expireBacklogs(now: number): void {
    const expired = this.backlogs.removeIf((b) => b.expiresAt <= now);
    for (const backlog of expired) {
      this.backlogRows -= backlog.rows.length;
      if (this.backlogged.get(backlog.key) === backlog) {
        this.backlogged.delete(backlog.key);
        if (!this.assigned.has(backlog.key)) this.lastSeen.delete(backlog.key);
      }
    }
    this.recomputeBacklogExpiry();
    for (const backlog of expired) for (const row of backlog.rows) row.item.sink.fail(Errors.backlogTimeout());
    if (expired.length > 0) this.changed();
  }

  private recomputeBacklogExpiry(): void {
    let min = Infinity;
    for (const b of this.backlogs) min = Math.min(min, b.expiresAt);
    this.backlogExpiry = min;
  }
}

function sameSlot(a: SlotRef | undefined, b: SlotRef): boolean {
  return a !== undefined && a.instance === b.instance && a.slot === b.slot;
}

function drain(queue: Deque<SlotEntry>): QueuedRow[] {
  const rows: QueuedRow[] = [];
  for (let e = queue.shift(); e !== undefined; e = queue.shift()) if (e !== RELEASE) rows.push(e);
  return rows;
}

function failCancelled(rows: readonly QueuedRow[]): void {
  for (const row of rows) row.item.sink.fail(cancelledError(row.item.request));
}

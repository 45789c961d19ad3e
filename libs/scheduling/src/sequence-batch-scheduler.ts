import type { ModelConfig } from '@nereid/model-config';
import type { ExecutionItem } from '@nereid/protocol';
import { batchRulesOf } from './batch-former';
import { systemClock } from './clock';
import { SequenceControls } from './sequence-controls';
import type { SequenceBatch, SequenceBatchContext } from './sequence-batch';
import { DirectSequenceBatch } from './sequence-direct';
import { OldestSequenceBatch } from './sequence-oldest';
import { checkSequenceRequest } from './sequence-request';
import { SequenceRows } from './sequence-rows';
import { SequenceSlots } from './sequence-slots';
import { ImplicitStates } from './sequence-state';
import { StopLatch } from './stop-latch';
import type { Scheduler, SchedulerOptions, StopOptions } from './types';

/** Triton's default `max_sequence_idle_microseconds` (1 s), for configs that were not normalized. */
const DEFAULT_IDLE_US = 1_000_000;

/**
 * Triton's sequence batcher (model-config.md §9), for every model with `sequence_batching`.
 *
 * A request must carry a correlation id (`sequence_id`: UINT64 or STRING, of the CORRID control's
 * type), batch size 1, and START on the first request of a sequence; a START on a live id ends that
 * sequence early and starts again in its slot. Each sequence gets a slot of one instance
 * (`SequenceSlots`), or waits in the FIFO backlog for one, where a request `timeout` applies.
 * A sequence without a request for `max_sequence_idle_microseconds` loses its slot and state.
 * The `direct` strategy (default) runs one execution over an instance's slots; `oldest` batches the
 * oldest requests of an instance's candidate sequences dynamically.
 *
 * What the backend receives: for each client request a new request object whose inputs also hold
 * the control tensors (`SequenceControls`) and the input states (`ImplicitStates`), and whose
 * outputs name the state outputs; padding rows (`request.padding`) fill empty direct slots. The
 * client's response loses the state outputs, which become the input states of the sequence's next
 * request. Request errors use Triton's words (`SequenceBatcherErrors`).
 *
 * Initial state data files are read when the scheduler is built (from `opts.modelDir`); a bad one
 * throws INVALID_ARG, which fails the model's load.
 */
export class SequenceBatchScheduler implements Scheduler {
  private readonly controls: SequenceControls;
  private readonly maxBatchSize: number;
  private readonly slots: SequenceSlots;
  private readonly batchers: SequenceBatch[];
  private readonly latch = new StopLatch();
  private disposed = false;
  /** stop() waits for the live sequences to end (or idle out) too: a reload moved traffic elsewhere. */
  private keepSequences = false;

  constructor(config: ModelConfig, opts: SchedulerOptions) {
    const sb = config.sequence_batching ?? {};
    const clock = opts.clock ?? systemClock;
    const instances = Math.max(1, Math.floor(opts.instanceCount));
    this.maxBatchSize = Math.max(0, Number(config.max_batch_size ?? 0));
    this.controls = new SequenceControls(config);
    const rows = new SequenceRows(config, this.controls, new ImplicitStates(config, opts.modelDir));
    const candidates = Number(sb.oldest?.max_candidate_sequences ?? 0);
    const slotsPerInstance = sb.oldest !== undefined && candidates > 0 ? candidates : Math.max(1, this.maxBatchSize);
    const idleMs = Number(sb.max_sequence_idle_microseconds || DEFAULT_IDLE_US) / 1000;
    this.slots = new SequenceSlots(
      instances,
      slotsPerInstance,
      idleMs,
      clock,
      (ref, entry) => this.batchers[ref.instance].enqueue(ref.slot, entry),
      () => this.checkDrained(),
    );
    const ctx: SequenceBatchContext = {
      rows,
      slots: this.slots,
      execute: opts.execute,
      clock,
      rules: batchRulesOf(config),
      stopping: () => this.latch.stopping,
      changed: () => this.checkDrained(),
    };
    const delayMs = Number(sb.direct?.max_queue_delay_microseconds ?? 0) / 1000;
    const utilization = Number(sb.direct?.minimum_slot_utilization ?? 0);
    this.batchers = Array.from({ length: instances }, (_v, i) =>
      sb.oldest !== undefined
        ? new OldestSequenceBatch(i, ctx, config)
        : new DirectSequenceBatch(i, slotsPerInstance, ctx, delayMs, utilization),
    );
  }

  get pendingCount(): number {
    let n = this.slots.backlogRequests;
    for (const b of this.batchers) n += b.pendingCount;
    return n;
  }

  get inflightCount(): number {
    let n = 0;
    for (const b of this.batchers) n += b.inflightCount;
    return n;
  }

  /** Slots owned by a sequence, over all instances: back to zero once every sequence has ended or idled out. */
  get sequenceSlotsInUse(): number {
    return this.slots.inUse;
  }

  /** Sequences waiting in the backlog for a slot. */
  get backlogSequences(): number {
    return this.slots.backlogSequences;
  }

  /** Whether the sequence holds a slot or waits for one here. */
  hasSequence(sequenceId: bigint | string): boolean {
    return this.slots.has(sequenceId);
  }

  enqueue(item: ExecutionItem): void {
    const error = checkSequenceRequest(item.request, this.controls, this.maxBatchSize) ?? this.slots.route(item, this.latch.stopping);
    if (error !== undefined) item.sink.fail(error);
  }

  /**
   * New sequences are refused from the call on; requests of live sequences are still taken, as in
   * Triton. Resolves once nothing is queued or running; with `sequences`, once every live sequence
   * has also ended or idled out (a reload: the sequences started here finish here).
   */
  stop(options?: StopOptions): Promise<void> {
    if (options?.sequences) this.keepSequences = true;
    const p = this.latch.start();
    for (const b of this.batchers) b.flush();
    this.checkDrained();
    return p;
  }

  private checkDrained(): void {
    if (!this.latch.stopping || this.disposed) return;
    if (this.pendingCount > 0 || this.inflightCount > 0) return;
    if (this.keepSequences && (this.slots.inUse > 0 || this.slots.backlogSequences > 0)) return;
    this.disposed = true;
    this.slots.dispose();
    for (const b of this.batchers) b.dispose();
    this.latch.check(true);
  }
}

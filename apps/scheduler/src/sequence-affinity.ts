import { InferenceError, type ExecutionItem, type InferenceRequest } from '@nereid/protocol';
import type { WireRequest } from '@nereid/transport';
import { registryId, type SequenceRegistry } from './sequence-registry';

/** A correlation id as Triton prints it. */
const idText = (id: bigint | string): string => (typeof id === 'bigint' ? id.toString() : id);

const inSequence = (id: bigint | string): boolean => id !== 0n && id !== '';

/**
 * The error for a request (without START) of a sequence whose state is gone: Triton's words for a
 * sequence that must start again, then why. INVALID_ARG, as Triton's: the client restarts the
 * sequence with START.
 */
export function lostStateError(request: InferenceRequest, why: string): InferenceError {
  return InferenceError.invalidArg(
    `inference request for sequence ${idText(request.sequenceId)} to model '${request.modelName}' must specify the START flag on the first ` +
      `request of the sequence: its state was lost when ${why}; restart the sequence with START`,
  );
}

/**
 * Where the sequences of one model version live while a scheduler holds its lease (distributed
 * mode). The sequence batcher runs in the scheduler and keeps a model's implicit state
 * (`sequence_batching.state`) there; a model without implicit state keeps its state itself, in
 * the worker instance that runs the sequence (a python model's dictionary, say). So:
 *
 * - each started sequence is bound to the worker that runs its slot, and recorded in the
 *   registry under this scheduler;
 * - when that worker leaves the cluster, a model that keeps its own state has lost the sequence's
 *   state: the sequence's next requests fail (lostStateError) until one comes with START; a model
 *   with implicit state goes on on another worker (the state is here);
 * - when this scheduler takes the lease over, every sequence the registry holds for the version
 *   lost its state with the previous holder (its batcher's slots, and implicit state): their next
 *   request without START fails the same way.
 */
export class SequenceAffinity {
  /** Live sequences started under this hold: registry id → the id and the worker running its slot. */
  private readonly bound = new Map<string, { id: bigint | string; workerId: string }>();
  /** Sequences whose state was lost before this hold (registry id → why). */
  private readonly lost = new Map<string, string>();

  constructor(
    /** `<name>/<version>`. */
    private readonly version: string,
    /** The model keeps its sequences' state in its instances (no implicit state). */
    readonly stateOnWorker: boolean,
    private readonly registry: SequenceRegistry,
    private readonly owner: string,
    private readonly warn: (message: string) => void,
  ) {}

  /** Reads (and clears) the sequences the version's previous holders left in the registry. */
  async takeOver(): Promise<number> {
    const previous = await this.registry.takeOver(this.version);
    for (const [id, owner] of previous) this.lost.set(id, `the scheduler that held it (${owner}) stopped`);
    return previous.size;
  }

  /** The error for a request of a sequence whose state was lost before this hold; undefined for the rest. */
  check(request: InferenceRequest): InferenceError | undefined {
    if (this.lost.size === 0 || !inSequence(request.sequenceId)) return undefined;
    const id = registryId(request.sequenceId);
    if (request.sequenceStart) {
      this.lost.delete(id);
      return undefined;
    }
    const why = this.lost.get(id);
    if (why === undefined) return undefined;
    if (request.sequenceEnd) this.lost.delete(id);
    return lostStateError(request, why);
  }

  /**
   * A batch's rows go to `workerId`: sequences that start are bound to it; a row of a sequence
   * whose state was on another worker (gone) fails, and travels as padding (run, never answered).
   */
  route(rows: readonly ExecutionItem[], wires: WireRequest[], workerId: string): void {
    const started: string[] = [];
    rows.forEach((row, i) => {
      const r = row.request;
      if (r.padding || !inSequence(r.sequenceId)) return;
      const id = registryId(r.sequenceId);
      const bound = this.bound.get(id);
      if (r.sequenceStart || !bound) {
        started.push(id);
        this.bound.set(id, { id: r.sequenceId, workerId });
        return;
      }
      if (bound.workerId === workerId) return;
      if (!this.stateOnWorker) {
        bound.workerId = workerId;
        return;
      }
      row.sink.fail(lostStateError(r, `the worker that held it (${bound.workerId}) left the cluster`));
      wires[i] = { ...wires[i], replyTo: '', flags: { ...wires[i].flags, padding: true } };
    });
    if (started.length > 0) {
      this.registry.add(this.version, started, this.owner).catch((e: unknown) => this.warn(`sequence registry: ${(e as Error).message}`));
    }
  }

  /** Forgets the sequences that ended (`live` false), here and in the registry. */
  prune(live: (id: bigint | string) => boolean): void {
    const ended: string[] = [];
    for (const [id, b] of this.bound) {
      if (live(b.id)) continue;
      this.bound.delete(id);
      ended.push(id);
    }
    if (ended.length > 0) {
      this.registry.remove(this.version, ended).catch((e: unknown) => this.warn(`sequence registry: ${(e as Error).message}`));
    }
  }
}

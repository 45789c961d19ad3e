import { byteSizeOf } from '@nereid/tensor';
import { TickGroups, type ExecuteBatchMessage, type MessagePort } from '@nereid/transport';

/** A message of batches this large (their input bytes) goes at once; the next batches start another. */
const MESSAGE_BYTES = 1024 * 1024;

interface Dispatch {
  batch: ExecuteBatchMessage;
  failed: (e: unknown) => void;
}

/** The input bytes of a batch (what its message will carry, in frames). */
function inputBytes(m: ExecuteBatchMessage): number {
  let n = 0;
  for (const r of m.requests) for (const t of r.inputs) n += byteSizeOf(t);
  return n;
}

/**
 * A scheduler's execute-batch messages, one per work queue per tick (TickGroups): the batches
 * dispatched to one worker's queue while handling one read of the request queue (`simple`, which
 * has no dynamic batching, made a batch per request) go as one message, its `more` holding all but
 * the first. Batches whose inputs reach MESSAGE_BYTES go without waiting for more (a message stays
 * far below Redis's 512 MB bulk limit).
 */
export class BatchDispatches {
  private readonly groups: TickGroups<Dispatch>;

  constructor(private readonly port: MessagePort) {
    this.groups = new TickGroups((queue, dispatches) => this.send(queue, dispatches), (d) => inputBytes(d.batch), MESSAGE_BYTES);
  }

  /** Enqueues `batch` on `queue`, with the other batches of this tick for that queue; `failed` hears that it could not be. */
  add(queue: string, batch: ExecuteBatchMessage, failed: (e: unknown) => void): void {
    this.groups.add(queue, { batch, failed });
  }

  private send(queue: string, dispatches: Dispatch[]): void {
    // A fresh message: the batches' own objects stay as they are (a batch handed again later is sent alone).
    const [first, ...more] = dispatches.map((d) => d.batch);
    const message = more.length === 0 ? first : { ...first, more };
    this.port.enqueue(queue, message).catch((e: unknown) => {
      for (const d of dispatches) d.failed(e);
    });
  }
}

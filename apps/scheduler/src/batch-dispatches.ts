import { isBytesData } from '@nereid/tensor';
import type { ExecuteBatchMessage, MessagePort } from '@nereid/transport';

/** A message of batches this large (their input bytes) goes at once; the next batches start another. */
const MESSAGE_BYTES = 1024 * 1024;

interface Pending {
  batches: ExecuteBatchMessage[];
  failed: Array<(e: unknown) => void>;
  bytes: number;
}

/** The input bytes of a batch, roughly (what its message will carry). */
function inputBytes(m: ExecuteBatchMessage): number {
  let n = 0;
  for (const r of m.requests) {
    for (const t of r.inputs) {
      if (isBytesData(t.data)) for (const e of t.data) n += 4 + e.byteLength;
      else n += t.data.byteLength;
    }
  }
  return n;
}

/**
 * A scheduler's execute-batch messages, one per work queue per tick: the batches dispatched to
 * one worker's queue while handling one read of the request queue (`simple`, which has no dynamic
 * batching, made a batch per request) go as one message, its `more` holding all but the first.
 * Each batch used to be a message of its own: an encode and an XADD on the scheduler, a read, a
 * decode and an ack on the worker, per batch. Batches whose inputs reach MESSAGE_BYTES go without
 * waiting for more (a message stays far below Redis's 512 MB bulk limit).
 *
 * The message goes out on `process.nextTick` after the first batch of a tick: Node runs it once
 * every promise reaction of that tick has run, so it reaches the port's outbox in the same turn.
 */
export class BatchDispatches {
  private readonly pending = new Map<string, Pending>();
  private scheduled = false;

  constructor(private readonly port: MessagePort) {}

  /** Enqueues `batch` on `queue`, with the other batches of this tick for that queue; `failed` hears that it could not be. */
  add(queue: string, batch: ExecuteBatchMessage, failed: (e: unknown) => void): void {
    let p = this.pending.get(queue);
    if (!p) this.pending.set(queue, (p = { batches: [], failed: [], bytes: 0 }));
    p.batches.push(batch);
    p.failed.push(failed);
    p.bytes += inputBytes(batch);
    if (p.bytes >= MESSAGE_BYTES) {
      this.pending.delete(queue);
      this.send(queue, p);
    } else if (!this.scheduled) {
      this.scheduled = true;
      process.nextTick(() => this.flush());
    }
  }

  private flush(): void {
    this.scheduled = false;
    for (const [queue, p] of this.pending) this.send(queue, p);
    this.pending.clear();
  }

  private send(queue: string, p: Pending): void {
    // A fresh message: the batches' own objects stay as they are (a batch handed again later is sent alone).
    const [first, ...more] = p.batches;
    const message = more.length === 0 ? first : { ...first, more };
    this.port.enqueue(queue, message).catch((e: unknown) => {
      for (const f of p.failed) f(e);
    });
  }
}

import type { ExecutionStats, InferenceError, InferenceResponse, ResponseSink } from '@nereid/protocol';
import { Names, type Delivery, type MessagePort, type WireRequest } from '@nereid/transport';
import { responseToWire } from '@nereid/worker';

/** Whether the scheduler still holds the lease under which a request was taken from its queue. */
export interface Holder {
  readonly deposed: boolean;
}

/**
 * A request held by a scheduler (distributed mode): where its answer goes, and the queue message
 * to ack once it ran. The worker answers the gateway itself, except for the batches of a model
 * with implicit state, whose responses come through the scheduler (`relay`) so that the sequence
 * batcher keeps the state outputs; the rest is passed on to the gateway from here. Once the
 * scheduler has lost the lease it took the request under, the sink does nothing: the next holder
 * takes the unacked message over and answers it.
 */
export class QueuedSink implements ResponseSink {
  private finished = false;
  /** Set while a worker's response to the request is passed on (the statistics it carried). */
  private relaying?: { stats?: ExecutionStats };

  constructor(
    readonly wire: WireRequest,
    readonly delivery: Delivery,
    private readonly port: MessagePort,
    private readonly holder: Holder,
  ) {}

  get done(): boolean {
    return this.finished;
  }

  /** Passes one worker response through `deliver` (which sends it down the sink chain to `send`). */
  relay(stats: ExecutionStats | undefined, deliver: () => void): void {
    this.relaying = { stats };
    try {
      deliver();
    } finally {
      this.relaying = undefined;
    }
  }

  send(response: InferenceResponse | undefined, final: boolean): void {
    if (this.finished || this.holder.deposed) return;
    if (final) this.finished = true;
    const relaying = this.relaying;
    // Not relaying: the worker answered the gateway itself (this marks the request complete).
    if (!relaying) return;
    const { requestId, replyTo } = this.wire;
    void this.port
      .send(Names.gatewayMailbox(replyTo), {
        kind: 'response', requestId, final, response: response && responseToWire(response), ...(relaying.stats ? { stats: relaying.stats } : {}),
      })
      .catch(() => undefined);
    relaying.stats = undefined;
  }

  /** Rejected or timed out in the queue, failed on the worker, or not handed over: the gateway is told. */
  fail(error: InferenceError): void {
    if (this.finished || this.holder.deposed) return;
    this.finished = true;
    const { requestId, replyTo } = this.wire;
    void this.port
      .send(Names.gatewayMailbox(replyTo), { kind: 'response', requestId, final: true, error: { code: error.code, message: error.message } })
      .catch(() => undefined)
      .finally(() => void this.delivery.ack().catch(() => undefined));
  }
}


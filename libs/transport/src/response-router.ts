import type { InferenceError } from '@nereid/protocol';
import type { CancelMessage, ResponseMessage, TransportMessage } from './messages';
import { Names, type MessagePort, type Subscription } from './port';

/** Whoever waits for a request's responses on the gateway side (a front door's sink, say). */
export interface ResponseWaiter {
  /** Every response message for the request, in order; the last one has `final` set. */
  onResponse(message: ResponseMessage): void;
}

/**
 * The gateway side of the seam (MLServer's dispatcher): gives requests cluster-unique ids, keeps
 * the waiter of each request this gateway holds, hands it the responses that arrive in the
 * gateway's mailbox, and turns a client that went away into a cancel message for whoever holds
 * the request. Responses for requests it does not know (cancelled, or from a stale redelivery)
 * are dropped and counted.
 */
export class ResponseRouter {
  private readonly waiters = new Map<string, ResponseWaiter>();
  private subscription?: Subscription;
  private sequence = 0;
  /** Responses that arrived for no waiter. */
  dropped = 0;

  constructor(
    private readonly port: MessagePort,
    readonly gatewayId: string,
  ) {}

  /** The mailbox workers answer to (a request's `replyTo`). */
  get mailbox(): string {
    return Names.gatewayMailbox(this.gatewayId);
  }

  /**
   * Receives the mailbox. When the port loses its broker, every request waiting here fails with
   * the port's error at once (UNAVAILABLE): its answer may have been lost with the broker, and a
   * client must not wait forever for it; an answer that still comes later is dropped.
   */
  async start(): Promise<void> {
    this.subscription ??= await this.port.receive(this.mailbox, (m) => this.route(m), { onLost: (e) => this.failAll(e) });
  }

  /** A request id no other gateway hands out. */
  nextRequestId(): string {
    return `${this.gatewayId}:${++this.sequence}`;
  }

  /** Waits for `requestId`'s responses until the final one. */
  register(requestId: string, waiter: ResponseWaiter): void {
    this.waiters.set(requestId, waiter);
  }

  /** Requests waiting for their final response. */
  get pending(): number {
    return this.waiters.size;
  }

  /** The client went away: forget its waiter and tell the cluster to stop working on it. */
  async cancel(requestId: string): Promise<void> {
    this.waiters.delete(requestId);
    const message: CancelMessage = { kind: 'cancel', requestId };
    await this.port.publish(Names.cancelTopic, message);
  }

  /** Ends every pending request with `error` (the transport failed under them). */
  failAll(error: InferenceError): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const [requestId, w] of waiters) {
      w.onResponse({ kind: 'response', requestId, final: true, error: { code: error.code, message: error.message } });
    }
  }

  route(message: TransportMessage): void {
    if (message.kind !== 'response') return;
    const waiter = this.waiters.get(message.requestId);
    if (!waiter) {
      this.dropped++;
      return;
    }
    if (message.final) this.waiters.delete(message.requestId);
    waiter.onResponse(message);
  }

  async stop(): Promise<void> {
    await this.subscription?.close();
    this.subscription = undefined;
  }
}

/**
 * The worker side of cancels: the requests a process is working on, each with an AbortSignal
 * that fires when a cancel message for it arrives (from any gateway, by broadcast).
 */
export class CancelRegistry {
  private readonly running = new Map<string, AbortController>();
  private subscription?: Subscription;

  constructor(private readonly port: MessagePort) {}

  async start(): Promise<void> {
    this.subscription ??= await this.port.subscribe(Names.cancelTopic, (m) => {
      if (m.kind === 'cancel') this.running.get(m.requestId)?.abort();
    });
  }

  /** The signal that tells the work on `requestId` to stop. */
  track(requestId: string): AbortSignal {
    let c = this.running.get(requestId);
    if (!c) this.running.set(requestId, (c = new AbortController()));
    return c.signal;
  }

  /** Done with `requestId` (answered or failed). */
  release(requestId: string): void {
    this.running.delete(requestId);
  }

  get size(): number {
    return this.running.size;
  }

  async stop(): Promise<void> {
    await this.subscription?.close();
    this.subscription = undefined;
  }
}

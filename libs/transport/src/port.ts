import type { InferenceError } from '@nereid/protocol';
import type { TransportMessage } from './messages';

/**
 * The one seam between the roles: three ways to move a TransportMessage.
 *
 * - **Work queues** (`enqueue` / `consume`): each message goes to one consumer of the queue, in
 *   the order it was enqueued, and stays owned by it until it is acked. Delivery is at least once:
 *   a message its consumer has not acked within `claimIdleMs` of being handed over (the consumer
 *   died, or hangs) goes to another consumer, `redelivered` set. A consumer that works longer
 *   on a message calls `touch()` to keep it.
 * - **Mailboxes** (`send` / `receive`): addressed messages, e.g. responses to the gateway that
 *   holds the client (the mailbox is the gateway id). Only that mailbox's receivers get them;
 *   nothing is kept for a mailbox no one receives.
 * - **Broadcast** (`publish` / `subscribe`): every subscriber of a topic gets every message
 *   (lifecycle and control events, cancels).
 *
 * Handlers are called one message at a time per subscription, in order; a handler that throws
 * does not stop the subscription (its error goes to the port's `onError`). Sending fails with an
 * UNAVAILABLE InferenceError when the port cannot reach its broker (never waits for it).
 */
export interface MessagePort {
  enqueue(queue: string, message: TransportMessage): Promise<void>;
  consume(queue: string, handler: (delivery: Delivery) => void, options?: ConsumeOptions): Promise<Subscription>;
  send(mailbox: string, message: TransportMessage): Promise<void>;
  receive(mailbox: string, handler: (message: TransportMessage) => void, options?: ReceiveOptions): Promise<Subscription>;
  publish(topic: string, message: TransportMessage): Promise<void>;
  subscribe(topic: string, handler: (message: TransportMessage) => void): Promise<Subscription>;
  /** Stops every subscription of this port without acking anything (what a process's death does). */
  close(): Promise<void>;
}

/** A work-queue message handed to one consumer. */
export interface Delivery {
  readonly message: TransportMessage;
  /** Handed over before to a consumer that did not ack it. */
  readonly redelivered: boolean;
  /** Done with: never delivered again. */
  ack(): Promise<void>;
  /** Still working on it: restarts its idle time so that it is not claimed by another consumer. */
  touch(): Promise<void>;
}

export interface ConsumeOptions {
  /** The consumer's name, unique among the queue's consumers (default: generated). */
  consumer?: string;
  /** Messages handed to this consumer and not yet acked, at most (default 16). */
  prefetch?: number;
  /** A message unacked this long is handed to another consumer (default 30 000 ms). */
  claimIdleMs?: number;
  /**
   * For a queue only this consumer reads (a worker's own): the queue is removed this long after
   * the consumer stopped (died, or went away), so that the queues of consumers long gone do not
   * pile up. Whatever it still held must be handed out again by its producer. Default: kept.
   */
  expireIdleMs?: number;
}

export interface ReceiveOptions {
  /**
   * Called when messages sent to the mailbox may have been lost: the port lost its connection to
   * its broker (once per outage; receiving resumes by itself when the broker is back, but a broker
   * that restarted empty has lost what was sent and not yet read). Answers awaited through the
   * mailbox should be given up with `error`.
   */
  onLost?: (error: InferenceError) => void;
}

export interface Subscription {
  close(): Promise<void>;
}

export const DEFAULT_PREFETCH = 16;
export const DEFAULT_CLAIM_IDLE_MS = 30_000;

/** The names the roles use; one place, so that gateway, scheduler and worker agree. */
export const Names = {
  /** Work for the worker hosting instances of a model key. */
  workQueue: (key: string): string => `work:${key}`,
  /** Responses to one gateway. */
  gatewayMailbox: (gatewayId: string): string => `gateway:${gatewayId}`,
  /** Cancels of requests whose client went away. */
  cancelTopic: 'cancel',
  /** Model lifecycle events. */
  lifecycleTopic: 'lifecycle',
  /** Worker and gateway heartbeats. */
  heartbeatTopic: 'heartbeat',
  /** Load, unload, statistics and index questions to every process of the cluster. */
  controlTopic: 'control',
} as const;

import type { TransportMessage } from './messages';
import {
  DEFAULT_CLAIM_IDLE_MS, DEFAULT_PREFETCH,
  type ConsumeOptions, type Delivery, type MessagePort, type Subscription,
} from './port';
import { PortSubscriptions } from './port-subscriptions';

/**
 * The embedded adapter: ports of one process share an InMemoryBroker and messages pass by
 * reference (no copy, no encoding). Handlers run in a microtask after the send, never inside it,
 * so a sender is never re-entered by its own message. Work-queue semantics are those of the Redis
 * adapter (see port.ts): per-queue order, at-least-once with redelivery after `claimIdleMs`.
 * Being microtasks, deliveries run before any timer or I/O: a caller that loops on the port
 * without ever waiting for I/O starves the event loop (bench/transport/run.js watches the clock
 * rather than a timer for that reason). Front doors are driven by I/O, so they never loop so.
 */
export class InMemoryBroker {
  private readonly queues = new Map<string, MemoryQueue>();
  private readonly mailboxes = new Map<string, Set<Listener>>();
  private readonly topics = new Map<string, Set<Listener>>();

  queue(name: string): MemoryQueue {
    let q = this.queues.get(name);
    if (!q) this.queues.set(name, (q = new MemoryQueue()));
    return q;
  }

  listeners(kind: 'mailbox' | 'topic', name: string): Set<Listener> {
    const map = kind === 'mailbox' ? this.mailboxes : this.topics;
    let s = map.get(name);
    if (!s) map.set(name, (s = new Set()));
    return s;
  }
}

interface Listener {
  deliver(message: TransportMessage): void;
}

interface Entry {
  message: TransportMessage;
  redelivered: boolean;
  /** The consumer that holds it, and since when (performance.now()); unset while queued. */
  holder?: MemoryConsumer;
  since: number;
  acked: boolean;
}

class MemoryQueue {
  readonly waiting: Entry[] = [];
  readonly consumers: MemoryConsumer[] = [];
  private next = 0;
  private scheduled = false;

  push(message: TransportMessage): void {
    this.waiting.push({ message, redelivered: false, since: 0, acked: false });
    this.schedule();
  }

  schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.dispatch();
    });
  }

  /** Hands waiting entries, in order, to consumers with room (round robin). */
  private dispatch(): void {
    while (this.waiting.length > 0) {
      const entry = this.waiting[0];
      const consumer = this.pick(entry);
      if (!consumer) return;
      this.waiting.shift();
      consumer.take(entry);
    }
  }

  private pick(entry: Entry): MemoryConsumer | undefined {
    const n = this.consumers.length;
    let fallback: MemoryConsumer | undefined;
    for (let i = 0; i < n; i++) {
      const c = this.consumers[(this.next + i) % n];
      if (!c.hasRoom()) continue;
      // A redelivered entry goes to another consumer than the one that lost it, when there is one.
      if (entry.redelivered && c === entry.holder) {
        fallback = c;
        continue;
      }
      this.next = (this.next + i + 1) % n;
      return c;
    }
    return fallback;
  }

  /** Entries held longer than their consumer's claim time go back to the head of the queue. */
  reclaim(now: number): void {
    const back: Entry[] = [];
    for (const c of this.consumers.concat(...this.orphans)) back.push(...c.expired(now));
    if (back.length === 0) return;
    for (const e of back) e.redelivered = true;
    this.waiting.unshift(...back);
    this.schedule();
  }

  /** Consumers that closed with entries unacked: those are claimed when they expire. */
  readonly orphans = new Set<MemoryConsumer>();
}

class MemoryConsumer implements Subscription {
  private readonly held = new Set<Entry>();
  private closed = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly queue: MemoryQueue,
    private readonly handler: (d: Delivery) => void,
    private readonly prefetch: number,
    private readonly claimIdleMs: number,
    private readonly onError: (e: unknown) => void,
  ) {
    this.timer = setInterval(() => queue.reclaim(performance.now()), Math.max(10, Math.min(1000, claimIdleMs / 4)));
    this.timer.unref();
  }

  hasRoom(): boolean {
    return !this.closed && this.held.size < this.prefetch;
  }

  take(entry: Entry): void {
    entry.holder = this;
    entry.since = performance.now();
    this.held.add(entry);
    const delivery: Delivery = {
      message: entry.message,
      redelivered: entry.redelivered,
      ack: async () => {
        if (entry.holder === this && this.held.delete(entry)) {
          entry.acked = true;
          if (this.closed && this.held.size === 0) this.queue.orphans.delete(this);
          this.queue.schedule();
        } else if (!entry.acked && !this.queue.waiting.includes(entry)) {
          // Claimed by another consumer meanwhile: an ack still ends it (as XACK does).
          entry.acked = true;
          entry.holder?.drop(entry);
        }
      },
      touch: async () => {
        if (entry.holder === this) entry.since = performance.now();
      },
    };
    try {
      this.handler(delivery);
    } catch (e) {
      this.onError(e);
    }
  }

  drop(entry: Entry): void {
    this.held.delete(entry);
    this.queue.schedule();
  }

  expired(now: number): Entry[] {
    const out: Entry[] = [];
    for (const e of this.held) {
      if (now - e.since >= this.claimIdleMs) {
        this.held.delete(e);
        out.push(e);
      }
    }
    if (this.closed && this.held.size === 0) this.queue.orphans.delete(this);
    return out;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const i = this.queue.consumers.indexOf(this);
    if (i >= 0) this.queue.consumers.splice(i, 1);
    if (this.held.size > 0) this.queue.orphans.add(this);
    // The queue still needs someone to notice expired entries when no consumer is left.
    if (this.queue.consumers.length > 0 || this.held.size === 0) clearInterval(this.timer);
    else setTimeout(() => clearInterval(this.timer), this.claimIdleMs * 2).unref();
  }
}

class MemoryListener implements Listener, Subscription {
  private closed = false;

  constructor(
    private readonly set: Set<Listener>,
    private readonly handler: (m: TransportMessage) => void,
    private readonly onError: (e: unknown) => void,
  ) {
    set.add(this);
  }

  deliver(message: TransportMessage): void {
    queueMicrotask(() => {
      if (this.closed) return;
      try {
        this.handler(message);
      } catch (e) {
        this.onError(e);
      }
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.set.delete(this);
  }
}


export class InMemoryPort implements MessagePort {
  private readonly subscriptions = new PortSubscriptions();

  constructor(
    private readonly broker: InMemoryBroker = new InMemoryBroker(),
    private readonly onError: (e: unknown) => void = () => undefined,
  ) {}

  async enqueue(queue: string, message: TransportMessage): Promise<void> {
    this.subscriptions.check();
    this.broker.queue(queue).push(message);
  }

  async consume(queue: string, handler: (d: Delivery) => void, options: ConsumeOptions = {}): Promise<Subscription> {
    this.subscriptions.check();
    const q = this.broker.queue(queue);
    const c = new MemoryConsumer(
      q, handler, options.prefetch ?? DEFAULT_PREFETCH, options.claimIdleMs ?? DEFAULT_CLAIM_IDLE_MS, this.onError,
    );
    q.consumers.push(c);
    q.schedule();
    return this.subscriptions.track(c);
  }

  async send(mailbox: string, message: TransportMessage): Promise<void> {
    this.subscriptions.check();
    for (const l of this.broker.listeners('mailbox', mailbox)) l.deliver(message);
  }

  async receive(mailbox: string, handler: (m: TransportMessage) => void): Promise<Subscription> {
    this.subscriptions.check();
    return this.subscriptions.track(new MemoryListener(this.broker.listeners('mailbox', mailbox), handler, this.onError));
  }

  async publish(topic: string, message: TransportMessage): Promise<void> {
    this.subscriptions.check();
    for (const l of this.broker.listeners('topic', topic)) l.deliver(message);
  }

  async subscribe(topic: string, handler: (m: TransportMessage) => void): Promise<Subscription> {
    this.subscriptions.check();
    return this.subscriptions.track(new MemoryListener(this.broker.listeners('topic', topic), handler, this.onError));
  }

  async close(): Promise<void> {
    await this.subscriptions.closeAll();
  }
}

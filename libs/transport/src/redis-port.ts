import { randomUUID } from 'node:crypto';
import type { ConnectionOptions as TlsOptions } from 'node:tls';
import Redis from 'ioredis';
import { decodeMessage, encodeMessage } from './codec';
import { Deadlines, type Deadline } from './deadlines';
import type { TransportMessage } from './messages';
import {
  DEFAULT_CLAIM_IDLE_MS, DEFAULT_PREFETCH,
  type ConsumeOptions, type Delivery, type MessagePort, type ReceiveOptions, type Subscription,
} from './port';
import { PortSubscriptions } from './port-subscriptions';
import { connectionOptions, connectOrFail, quietErrors, redisError } from './redis-connection';
import { RedisOutbox } from './redis-outbox';
import { MailboxReader, StreamConsumer } from './redis-readers';
import { TransportErrors } from './transport-errors';

/**
 * The distributed adapter, on Redis (ioredis):
 *
 * - work queues are streams with one consumer group: XADD, XREADGROUP (order per queue), XACK +
 *   XDEL on ack, XAUTOCLAIM after `claimIdleMs` for what a dead consumer held (at least once);
 * - mailboxes are one stream per mailbox, read with XREAD by its receiver, which deletes what it
 *   read; the messages one port sends to a mailbox in one event-loop turn share one entry; the
 *   stream expires when nothing has been sent to it for `mailboxTtlMs`. (Streams, not
 *   pub/sub: a response of tens of MiB would exceed Redis's pub/sub client output buffer limit.)
 * - broadcast is pub/sub (small events only, for the same reason).
 *
 * The commands a port issues in one event-loop turn (appends, acks, deletes) are written to Redis
 * as one pipeline (redis-outbox.ts): one write and one reply per turn, not per message.
 *
 * Messages are encoded with codec.ts (tensors as raw binary frames). Commands never wait for a
 * Redis that is gone: the offline queue is off, so a send fails at once, and any command that does
 * not answer within `commandTimeoutMs` fails, both as UNAVAILABLE; the connections reconnect by
 * themselves, and readers pick up where they were (recreating their consumer group if Redis lost
 * it). `redis://:password@host:port/db` and `rediss://` (TLS) URLs are accepted as ioredis reads them.
 */
export interface RedisPortOptions {
  url: string;
  /** Key prefix (default `nereid:`). */
  prefix?: string;
  /** The consumer group of work queues (default `nereid`). */
  group?: string;
  /** A command unanswered this long fails UNAVAILABLE (default 1000 ms). */
  commandTimeoutMs?: number;
  /** A mailbox nothing is sent to for this long is removed (default 60 000 ms). */
  mailboxTtlMs?: number;
  /** TLS settings (a private CA, a client certificate) for a `rediss://` URL, which turns TLS on by itself. */
  tls?: TlsOptions;
  /** Errors a send cannot return: handler throws, undecodable messages, lost connections. */
  onError?: (error: unknown) => void;
}

export class RedisPort implements MessagePort {
  private readonly prefix: string;
  private readonly group: string;
  private readonly onError: (e: unknown) => void;
  private readonly subscriptions = new PortSubscriptions();
  private readonly topicHandlers = new Map<string, Set<(m: TransportMessage) => void>>();
  private sub?: Redis;
  /** When this port last renewed each mailbox's expiry (Date.now()). */
  private readonly expiresRenewed = new Map<string, number>();
  /** The commands of each event-loop turn, written in one pipeline. */
  private readonly outbox: RedisOutbox;
  /** When each command waited for fails (`timed`). */
  private readonly deadlines = new Deadlines();

  private constructor(
    private readonly options: RedisPortOptions,
    private readonly cmd: Redis,
  ) {
    this.prefix = options.prefix ?? 'nereid:';
    this.group = options.group ?? 'nereid';
    this.onError = quietErrors(options.onError ?? (() => undefined));
    this.outbox = new RedisOutbox(cmd, (bytes, command) => this.timed(bytes, command));
  }

  /** Connects; fails UNAVAILABLE when Redis cannot be reached now. */
  static async connect(options: RedisPortOptions): Promise<RedisPort> {
    // No enableAutoPipelining: the outbox pipelines each turn's commands itself (redis-outbox.ts).
    const cmd = new Redis(options.url, connectionOptions(options.tls ? { tls: options.tls } : {}));
    const port = new RedisPort(options, cmd);
    cmd.on('error', (e) => port.onError(e));
    await connectOrFail(cmd);
    return port;
  }

  /** A fresh connection for a blocking reader (no command timeout: its reads block on purpose). */
  private blockingConnection(): Redis {
    const conn = new Redis(this.options.url, connectionOptions(this.options.tls ? { tls: this.options.tls } : {}));
    conn.on('error', (e) => this.onError(e));
    return conn;
  }

  private key(kind: 'q' | 'm' | 't', name: string): string {
    return `${this.prefix}${kind}:${name}`;
  }

  async enqueue(queue: string, message: TransportMessage): Promise<void> {
    this.subscriptions.check();
    const data = encodeMessage(message);
    try {
      await this.outbox.append(this.key('q', queue), data, false);
    } catch (e) {
      throw redisError(e);
    }
  }

  async consume(queue: string, handler: (d: Delivery) => void, options: ConsumeOptions = {}): Promise<Subscription> {
    this.subscriptions.check();
    const consumer = new StreamConsumer(
      this.outbox, this.blockingConnection(), this.key('q', queue), this.group,
      options.consumer ?? `c-${randomUUID()}`, options.prefetch ?? DEFAULT_PREFETCH,
      options.claimIdleMs ?? DEFAULT_CLAIM_IDLE_MS, handler, this.onError, options.expireIdleMs,
    );
    await consumer.start();
    return this.subscriptions.track(consumer);
  }

  async send(mailbox: string, message: TransportMessage): Promise<void> {
    this.subscriptions.check();
    const key = this.key('m', mailbox);
    const data = encodeMessage(message);
    try {
      const ttl = this.options.mailboxTtlMs ?? 60_000;
      const now = Date.now();
      const sent = this.outbox.append(key, data, true);
      // The expiry is renewed once per tenth of the TTL, not on every send (one command less per response).
      if ((this.expiresRenewed.get(key) ?? 0) + ttl / 10 <= now) {
        if (this.expiresRenewed.size > 10_000) this.expiresRenewed.clear();
        this.expiresRenewed.set(key, now);
        await Promise.all([sent, this.outbox.command('PEXPIRE', key, ttl)]).catch((e: unknown) => {
          this.expiresRenewed.delete(key);
          throw e;
        });
      } else {
        await sent;
      }
    } catch (e) {
      throw redisError(e);
    }
  }

  async receive(mailbox: string, handler: (m: TransportMessage) => void, options: ReceiveOptions = {}): Promise<Subscription> {
    this.subscriptions.check();
    const reader = new MailboxReader(this.outbox, this.blockingConnection(), this.key('m', mailbox), handler, this.onError, options.onLost);
    await reader.start();
    return this.subscriptions.track(reader);
  }

  async publish(topic: string, message: TransportMessage): Promise<void> {
    this.subscriptions.check();
    try {
      const data = encodeMessage(message);
      await this.timed(data.length, this.cmd.publish(this.key('t', topic), data));
    } catch (e) {
      throw redisError(e);
    }
  }

  async subscribe(topic: string, handler: (m: TransportMessage) => void): Promise<Subscription> {
    this.subscriptions.check();
    const sub = await this.subscriber();
    const channel = this.key('t', topic);
    let handlers = this.topicHandlers.get(channel);
    if (!handlers) {
      this.topicHandlers.set(channel, (handlers = new Set()));
      try {
        await sub.subscribe(channel);
      } catch (e) {
        this.topicHandlers.delete(channel);
        throw redisError(e);
      }
    }
    const mine = (m: TransportMessage): void => handler(m);
    handlers.add(mine);
    return this.subscriptions.track({
      close: async () => {
        handlers!.delete(mine);
        if (handlers!.size === 0 && this.topicHandlers.get(channel) === handlers) {
          this.topicHandlers.delete(channel);
          await sub.unsubscribe(channel).catch(() => undefined);
        }
      },
    });
  }

  private async subscriber(): Promise<Redis> {
    if (this.sub) return this.sub;
    const sub = this.blockingConnection();
    this.sub = sub;
    sub.on('messageBuffer', (channel: Buffer, data: Buffer) => {
      const handlers = this.topicHandlers.get(channel.toString());
      if (!handlers) return;
      let message: TransportMessage;
      try {
        message = decodeMessage(data);
      } catch (e) {
        this.onError(e);
        return;
      }
      for (const h of handlers) {
        try {
          h(message);
        } catch (e) {
          this.onError(e);
        }
      }
    });
    try {
      await connectOrFail(sub);
    } catch (e) {
      this.sub = undefined;
      throw e;
    }
    return sub;
  }

  async close(): Promise<void> {
    if (this.subscriptions.closed) return;
    await this.subscriptions.closeAll();
    this.sub?.disconnect();
    this.cmd.disconnect();
  }

  /**
   * A command's answer, or UNAVAILABLE after `commandTimeoutMs` plus the time the payload takes
   * to write at a slow 4 MB/s (a send of tens of MiB is not a hung Redis). ioredis's own
   * `commandTimeout` is one figure for every command, so it cannot tell those apart.
   */
  private timed<T>(bytes: number, command: Promise<T>): Promise<T> {
    const ms = (this.options.commandTimeoutMs ?? 1000) + bytes / 4_000;
    return new Promise<T>((resolve, reject) => {
      const deadline: Deadline = { at: performance.now() + ms, expire: () => reject(TransportErrors.redisUnavailable(`no answer within ${Math.round(ms)} ms`)) };
      this.deadlines.add(deadline);
      command.then(
        (v) => {
          this.deadlines.delete(deadline);
          resolve(v);
        },
        (e) => {
          this.deadlines.delete(deadline);
          reject(e);
        },
      );
    });
  }
}

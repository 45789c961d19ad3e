import { randomUUID } from 'node:crypto';
import type { ConnectionOptions as TlsOptions } from 'node:tls';
import Redis, { type RedisOptions } from 'ioredis';
import { InferenceError } from '@nereid/protocol';
import { decodeMessage, encodeMessage } from './codec';
import type { TransportMessage } from './messages';
import {
  DEFAULT_CLAIM_IDLE_MS, DEFAULT_PREFETCH,
  type ConsumeOptions, type Delivery, type MessagePort, type ReceiveOptions, type Subscription,
} from './port';
import { PortSubscriptions } from './port-subscriptions';
import { TransportErrors } from './transport-errors';

/**
 * The distributed adapter, on Redis (ioredis):
 *
 * - work queues are streams with one consumer group: XADD, XREADGROUP (order per queue), XACK +
 *   XDEL on ack, XAUTOCLAIM after `claimIdleMs` for what a dead consumer held (at least once);
 * - mailboxes are one stream per mailbox, read with XREAD by its receiver, which deletes what it
 *   read; the stream expires when nothing has been sent to it for `mailboxTtlMs`. (Streams, not
 *   pub/sub: a response of tens of MiB would exceed Redis's pub/sub client output buffer limit.)
 * - broadcast is pub/sub (small events only, for the same reason).
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

const BLOCK_MS = 1000;
const RETRY_MS = 100;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function connectionOptions(extra: RedisOptions = {}): RedisOptions {
  return {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    retryStrategy: (times: number) => Math.min(50 * times, 500),
    ...extra,
  };
}

/**
 * Connects `conn`; a failure says why (ioredis rejects `connect()` with "Connection is closed."
 * and reports the reason, e.g. WRONGPASS, as an 'error' event).
 */
async function connectOrFail(conn: Redis): Promise<void> {
  let reason: unknown;
  const onError = (e: unknown): void => {
    reason ??= e;
  };
  conn.on('error', onError);
  try {
    await conn.connect();
  } catch (e) {
    conn.disconnect();
    const why = reason ?? e;
    throw TransportErrors.redisUnavailable((why as Error)?.message ?? String(why));
  } finally {
    conn.off('error', onError);
  }
}

/** A failed Redis command as an InferenceError: Redis's own error replies are INTERNAL, the rest UNAVAILABLE. */
function redisError(e: unknown): InferenceError {
  if (e instanceof InferenceError) return e;
  const err = e as Error;
  if (err?.name === 'ReplyError') return InferenceError.internal(`transport: Redis answered: ${err.message}`);
  return TransportErrors.redisUnavailable(err?.message ?? String(e));
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

  private constructor(
    private readonly options: RedisPortOptions,
    private readonly cmd: Redis,
  ) {
    this.prefix = options.prefix ?? 'nereid:';
    this.group = options.group ?? 'nereid';
    this.onError = options.onError ?? (() => undefined);
  }

  /** Connects; fails UNAVAILABLE when Redis cannot be reached now. */
  static async connect(options: RedisPortOptions): Promise<RedisPort> {
    // No enableAutoPipelining: measured on the busy 2-core test machine it cut XADD/s by 4x.
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
      await this.timed(data.length, this.cmd.xadd(this.key('q', queue), '*', 'm', data));
    } catch (e) {
      throw redisError(e);
    }
  }

  async consume(queue: string, handler: (d: Delivery) => void, options: ConsumeOptions = {}): Promise<Subscription> {
    this.subscriptions.check();
    const consumer = new StreamConsumer(
      this.cmd, this.blockingConnection(), this.key('q', queue), this.group,
      options.consumer ?? `c-${randomUUID()}`, options.prefetch ?? DEFAULT_PREFETCH,
      options.claimIdleMs ?? DEFAULT_CLAIM_IDLE_MS, handler, this.onError,
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
      // The expiry is renewed once per tenth of the TTL, not on every send (one command less per response).
      if ((this.expiresRenewed.get(key) ?? 0) + ttl / 10 <= now) {
        const results = await this.timed(data.length, this.cmd.pipeline().xadd(key, '*', 'm', data).pexpire(key, ttl).exec());
        for (const [err] of results ?? []) if (err) throw err;
        if (this.expiresRenewed.size > 10_000) this.expiresRenewed.clear();
        this.expiresRenewed.set(key, now);
      } else {
        await this.timed(data.length, this.cmd.xadd(key, '*', 'm', data));
      }
    } catch (e) {
      throw redisError(e);
    }
  }

  async receive(mailbox: string, handler: (m: TransportMessage) => void, options: ReceiveOptions = {}): Promise<Subscription> {
    this.subscriptions.check();
    const reader = new MailboxReader(this.cmd, this.blockingConnection(), this.key('m', mailbox), handler, this.onError, options.onLost);
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
      const timer = setTimeout(() => reject(TransportErrors.redisUnavailable(`no answer within ${Math.round(ms)} ms`)), ms);
      command.then(
        (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        (e) => {
          clearTimeout(timer);
          reject(e);
        },
      );
    });
  }
}

type StreamEntry = [Buffer, Buffer[]];

/** One consumer of a work queue: reads new entries and claims idle ones, in its own loop. */
class StreamConsumer implements Subscription {
  private readonly held = new Set<string>();
  private closed = false;
  private groupReady = false;
  private nextClaim = 0;
  private loop?: Promise<void>;
  private roomWaiter?: () => void;

  constructor(
    private readonly cmd: Redis,
    private readonly conn: Redis,
    private readonly key: string,
    private readonly group: string,
    private readonly name: string,
    private readonly prefetch: number,
    private readonly claimIdleMs: number,
    private readonly handler: (d: Delivery) => void,
    private readonly onError: (e: unknown) => void,
  ) {}

  async start(): Promise<void> {
    await connectOrFail(this.conn);
    try {
      await this.ensureGroup();
    } catch (e) {
      this.conn.disconnect();
      throw redisError(e);
    }
    this.loop = this.run();
  }

  private async ensureGroup(): Promise<void> {
    try {
      await this.conn.xgroup('CREATE', this.key, this.group, '0', 'MKSTREAM');
    } catch (e) {
      if (!/BUSYGROUP/.test((e as Error).message)) throw e;
    }
    this.groupReady = true;
  }

  private async run(): Promise<void> {
    const claimEvery = Math.max(10, Math.min(1000, this.claimIdleMs / 4));
    while (!this.closed) {
      try {
        if (!this.groupReady) await this.ensureGroup();
        const room = this.prefetch - this.held.size;
        if (room <= 0) {
          await new Promise<void>((resolve) => {
            this.roomWaiter = resolve;
            setTimeout(resolve, claimEvery);
          });
          this.roomWaiter = undefined;
          continue;
        }
        if (Date.now() >= this.nextClaim) {
          this.nextClaim = Date.now() + claimEvery;
          const claimed = (await this.conn.callBuffer(
            'XAUTOCLAIM', this.key, this.group, this.name, this.claimIdleMs, '0-0', 'COUNT', room,
          )) as [Buffer, StreamEntry[] | null, unknown];
          for (const entry of claimed[1] ?? []) if (entry) this.deliver(entry, true);
          continue;
        }
        const block = Math.max(1, Math.min(BLOCK_MS, this.nextClaim - Date.now()));
        const read = (await this.conn.callBuffer(
          'XREADGROUP', 'GROUP', this.group, this.name, 'COUNT', room, 'BLOCK', block, 'STREAMS', this.key, '>',
        )) as Array<[Buffer, StreamEntry[]]> | null;
        for (const [, entries] of read ?? []) for (const entry of entries) this.deliver(entry, false);
      } catch (e) {
        if (this.closed) return;
        if (/NOGROUP/.test((e as Error).message)) this.groupReady = false;
        else this.onError(e);
        await sleep(RETRY_MS);
      }
    }
  }

  private deliver([rawId, fields]: StreamEntry, redelivered: boolean): void {
    const id = rawId.toString();
    if (this.held.has(id)) return; // still ours: claimed back from ourselves, not a new delivery
    const data = fields[1];
    let message: TransportMessage;
    try {
      message = decodeMessage(data);
    } catch (e) {
      // Nothing can ever decode it: report it and drop it rather than redeliver it forever.
      this.onError(e);
      void this.ackId(id).catch(() => undefined);
      return;
    }
    this.held.add(id);
    const delivery: Delivery = {
      message,
      redelivered,
      ack: async () => {
        this.held.delete(id);
        this.roomWaiter?.();
        await this.ackId(id);
      },
      touch: async () => {
        try {
          await this.cmd.xclaim(this.key, this.group, this.name, 0, id, 'JUSTID');
        } catch (e) {
          throw redisError(e);
        }
      },
    };
    try {
      this.handler(delivery);
    } catch (e) {
      this.onError(e);
    }
  }

  private async ackId(id: string): Promise<void> {
    try {
      const results = await this.cmd.pipeline().xack(this.key, this.group, id).xdel(this.key, id).exec();
      for (const [err] of results ?? []) if (err) throw err;
    } catch (e) {
      throw redisError(e);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.roomWaiter?.();
    this.conn.disconnect();
    await this.loop?.catch(() => undefined);
  }
}

/**
 * The receiver of one mailbox stream: reads in order, deletes what it has read. It starts from the
 * stream's beginning, so what was sent before it started is delivered too (a gateway id is new
 * for each gateway process, and the router drops responses it has no waiter for).
 */
class MailboxReader implements Subscription {
  private closed = false;
  /** False from a failed read until the next one that succeeds (one `onLost` per outage). */
  private reading = true;
  private lastId = '0-0';
  private loop?: Promise<void>;

  constructor(
    private readonly cmd: Redis,
    private readonly conn: Redis,
    private readonly key: string,
    private readonly handler: (m: TransportMessage) => void,
    private readonly onError: (e: unknown) => void,
    private readonly onLost?: (error: InferenceError) => void,
  ) {}

  async start(): Promise<void> {
    await connectOrFail(this.conn);
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      try {
        const read = (await this.conn.callBuffer(
          'XREAD', 'COUNT', 256, 'BLOCK', BLOCK_MS, 'STREAMS', this.key, this.lastId,
        )) as Array<[Buffer, StreamEntry[]]> | null;
        this.reading = true;
        const ids: string[] = [];
        for (const [, entries] of read ?? []) {
          for (const [rawId, fields] of entries) {
            const id = rawId.toString();
            ids.push(id);
            this.lastId = id;
            try {
              this.handler(decodeMessage(fields[1]));
            } catch (e) {
              this.onError(e);
            }
          }
        }
        if (ids.length > 0) void this.cmd.xdel(this.key, ...ids).catch(() => undefined);
      } catch (e) {
        if (this.closed) return;
        if (this.reading && !(e as Error)?.name?.includes('ReplyError')) {
          // The connection dropped (Redis died, restarted or is cut off): what was sent here and not
          // read yet may be gone with it, and the senders' answers with them.
          this.reading = false;
          this.onLost?.(TransportErrors.redisUnavailable(`the connection was lost while waiting for answers (${(e as Error)?.message ?? e})`));
        }
        this.onError(e);
        await sleep(RETRY_MS);
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.conn.disconnect();
    await this.loop?.catch(() => undefined);
  }
}

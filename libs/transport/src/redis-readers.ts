import type Redis from 'ioredis';
import type { InferenceError } from '@nereid/protocol';
import { decodeMessage } from './codec';
import type { TransportMessage } from './messages';
import type { Delivery, Subscription } from './port';
import { BLOCK_MS, connectionWords, connectOrFail, redisError, RETRY_MS, sleep, type StreamEntry } from './redis-connection';
import type { RedisOutbox } from './redis-outbox';
import { TransportErrors } from './transport-errors';

/**
 * The Redis port's two readers, each a loop of blocking reads on a connection of its own: a work
 * queue's consumer (XREADGROUP / XAUTOCLAIM), whose acks go through the port's outbox with the
 * turn's other commands, and a mailbox's receiver (XREAD), whose deletes ride behind its reads.
 * Each issues its next read at the end of the turn that handled the last one's messages, with the
 * outbox's commands of that turn written ahead of it on its connection (RedisOutbox.aheadOf).
 */

/**
 * Removes the consumers of a queue's group that hold nothing and have not read for ARGV[3] ms
 * (other than ARGV[2], the caller), atomically: a consumer that died, or a standby that reads
 * nothing, would otherwise stay in the group forever (a new one is made by each process start).
 * One that reads again is made again by its next XREADGROUP. KEYS: queue. ARGV: group, self, idle ms.
 */
const FORGET_IDLE_CONSUMERS = `
local consumers = redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])
local removed = 0
for _, c in ipairs(consumers) do
  local f = {}
  for i = 1, #c, 2 do f[c[i]] = c[i + 1] end
  if f['name'] ~= ARGV[2] and tonumber(f['pending']) == 0 and tonumber(f['idle']) > tonumber(ARGV[3]) then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], f['name'])
    removed = removed + 1
  end
end
return removed
`;

/** Resolves after the I/O callbacks of this turn of the event loop (setImmediate). */
const endOfTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** How often a consumer looks after its queue (its expiry, the group's idle consumers), at most. */
const UPKEEP_MS = 10_000;

/** One consumer of a work queue: reads new entries and claims idle ones, in its own loop. */
export class StreamConsumer implements Subscription {
  private readonly held = new Set<string>();
  private closed = false;
  private groupReady = false;
  private nextClaim = 0;
  private nextUpkeep = 0;
  /** Claim rounds issued so far. */
  private claimRound = 0;
  /**
   * Entries acked here, with the claim round that was the last issued when the ack was done
   * (Infinity while it is under way): a claim of this consumer's own idle entries issued before
   * the XACK ran may still bring them back, and must not deliver them again.
   */
  private readonly acked = new Map<string, number>();
  private loop?: Promise<void>;
  private roomWaiter?: () => void;

  constructor(
    private readonly outbox: RedisOutbox,
    private readonly conn: Redis,
    private readonly key: string,
    private readonly group: string,
    private readonly name: string,
    private readonly prefetch: number,
    private readonly claimIdleMs: number,
    private readonly handler: (d: Delivery) => void,
    private readonly onError: (e: unknown) => void,
    /** ConsumeOptions.expireIdleMs. */
    private readonly expireIdleMs?: number,
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
        if (Date.now() >= this.nextUpkeep) await this.upkeep();
        const room = this.prefetch - this.held.size;
        if (room <= 0) {
          await new Promise<void>((resolve) => {
            this.roomWaiter = resolve;
            setTimeout(resolve, Math.max(1, Math.min(claimEvery, this.nextUpkeep - Date.now())));
          });
          this.roomWaiter = undefined;
          continue;
        }
        if (Date.now() >= this.nextClaim) {
          this.nextClaim = Date.now() + claimEvery;
          const round = ++this.claimRound;
          const claimed = (await this.outbox.aheadOf(this.conn, () => this.conn.callBuffer(
            'XAUTOCLAIM', this.key, this.group, this.name, this.claimIdleMs, '0-0', 'COUNT', room,
          ))) as [Buffer, StreamEntry[] | null, unknown];
          for (const entry of claimed[1] ?? []) if (entry && !this.acked.has(entry[0].toString())) this.deliver(entry, true);
          // Acks done before this round was issued cannot come back in it or any later one.
          for (const [id, doneAt] of this.acked) if (doneAt < round) this.acked.delete(id);
          continue;
        }
        const block = Math.max(1, Math.min(BLOCK_MS, this.nextClaim - Date.now(), this.nextUpkeep - Date.now()));
        const read = (await this.outbox.aheadOf(this.conn, () => this.conn.callBuffer(
          'XREADGROUP', 'GROUP', this.group, this.name, 'COUNT', room, 'BLOCK', block, 'STREAMS', this.key, '>',
        ))) as Array<[Buffer, StreamEntry[]]> | null;
        if (!read) continue;
        // The next read goes with what handling these asks of the outbox: at the end of this turn,
        // or, when the handlers asked nothing yet, of the next one, where work they started at the
        // turn's end (a worker's model run) has answered.
        const release = this.outbox.hold();
        try {
          for (const [, entries] of read) for (const entry of entries) this.deliver(entry, false);
          await endOfTurn();
          if (!this.outbox.pending) await endOfTurn();
        } finally {
          release();
        }
      } catch (e) {
        if (this.closed) return;
        if (/NOGROUP/.test((e as Error).message)) this.groupReady = false;
        else this.onError(e);
        await sleep(RETRY_MS);
      }
    }
  }

  /**
   * Keeps the queue from piling up what is gone: renews its expiry (expireIdleMs: it lapses once
   * this consumer stops), and removes the group's consumers that hold nothing and have not read
   * for twice the claim time (at least a second: they are dead, or standbys that read nothing).
   */
  private async upkeep(): Promise<void> {
    const every = Math.min(UPKEEP_MS, Math.max(100, this.claimIdleMs), this.expireIdleMs ? this.expireIdleMs / 4 : UPKEEP_MS);
    this.nextUpkeep = Date.now() + every;
    if (this.expireIdleMs) await this.conn.pexpire(this.key, Math.ceil(this.expireIdleMs));
    await this.conn.eval(FORGET_IDLE_CONSUMERS, 1, this.key, this.group, this.name, Math.max(1000, 2 * this.claimIdleMs));
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
        this.acked.set(id, Number.POSITIVE_INFINITY);
        this.roomWaiter?.();
        try {
          await this.ackId(id);
        } finally {
          this.acked.set(id, this.claimRound);
        }
      },
      touch: async () => {
        try {
          await this.outbox.command('XCLAIM', this.key, this.group, this.name, 0, id, 'JUSTID');
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

  /** XACK + XDEL, with the turn's other acks of this queue (one pipeline per turn, not per message). */
  private async ackId(id: string): Promise<void> {
    try {
      await this.outbox.ack(this.key, this.group, id);
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
 * The receiver of one mailbox stream: reads in order, deletes what it has read (an entry holds
 * one message, or the messages one port sent to the mailbox in one turn, in order). It starts from the
 * stream's beginning, so what was sent before it started is delivered too (a gateway id is new
 * for each gateway process, and the router drops responses it has no waiter for).
 *
 * The XDEL of what it read rides behind its next XREAD on its own connection (one write): Redis
 * runs it once that read returns and answers both together, so deleting costs no write, reply or
 * wake-up of its own. An entry read is deleted when the next read returns (new messages, or the
 * block time at the latest).
 */
export class MailboxReader implements Subscription {
  private closed = false;
  /** False from a failed read until the next one that succeeds (one `onLost` per outage). */
  private reading = true;
  private lastId = '0-0';
  /** Entries read and not deleted yet. */
  private toDelete: string[] = [];
  private loop?: Promise<void>;

  constructor(
    private readonly outbox: RedisOutbox,
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
      const deleting = this.toDelete;
      this.toDelete = [];
      try {
        const read = await this.read(deleting);
        this.reading = true;
        if (!read) continue;
        // The next read goes at the end of this turn, with what handling these asked of the outbox.
        const release = this.outbox.hold();
        try {
          for (const [, entries] of read) {
            for (const [rawId, fields] of entries) {
              const id = rawId.toString();
              this.toDelete.push(id);
              this.lastId = id;
              for (let i = 1; i < fields.length; i += 2) {
                try {
                  this.handler(decodeMessage(fields[i]));
                } catch (e) {
                  this.onError(e);
                }
              }
            }
          }
          await endOfTurn();
        } finally {
          release();
        }
      } catch (e) {
        if (this.closed) return;
        this.toDelete.unshift(...deleting);
        if (this.reading && !(e as Error)?.name?.includes('ReplyError')) {
          // The connection dropped (Redis died, restarted or is cut off): what was sent here and not
          // read yet may be gone with it, and the senders' answers with them.
          this.reading = false;
          const why = connectionWords((e as Error)?.message ?? String(e));
          const detail = why === 'the connection was lost' ? '' : ` (${why})`;
          this.onLost?.(TransportErrors.redisUnavailable(`the connection was lost while waiting for answers${detail}`));
        }
        this.onError(e);
        await sleep(RETRY_MS);
      }
    }
  }

  /** The next XREAD's entries; the XDEL of `deleting` goes in the same write, after it. */
  private async read(deleting: string[]): Promise<Array<[Buffer, StreamEntry[]]> | null> {
    const xread = ['XREAD', 'COUNT', 256, 'BLOCK', BLOCK_MS, 'STREAMS', this.key, this.lastId] as const;
    if (deleting.length === 0) return (await this.outbox.aheadOf(this.conn, () => this.conn.callBuffer(...xread))) as Array<[Buffer, StreamEntry[]]> | null;
    const results = await this.outbox.aheadOf(this.conn, () => this.conn.pipeline().callBuffer(...xread).xdel(this.key, ...deleting).exec());
    const [err, value] = results?.[0] ?? [new Error('no answer to XREAD')];
    if (err) throw err;
    return value as Array<[Buffer, StreamEntry[]]> | null;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.conn.disconnect();
    await this.loop?.catch(() => undefined);
  }
}

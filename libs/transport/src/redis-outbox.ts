import type Redis from 'ioredis';
import type { ChainableCommander } from 'ioredis';

/** Whoever issued a command, told its outcome. */
interface Waiter {
  resolve: () => void;
  reject: (e: unknown) => void;
}

/** One stream entry to append: its messages (one field each), and who waits for it. */
interface Entry {
  key: string;
  messages: Buffer[];
  waiters: Waiter[];
}

/** XACK + XDEL of entries of one stream. */
interface Acks {
  group: string;
  ids: string[];
  waiters: Waiter[];
}

/** The commands gathered for one pipeline. */
interface Turn {
  entries: Entry[];
  acks?: Map<string, Acks>;
  extra?: Array<{ args: [string, ...Array<string | number>]; waiter: Waiter }>;
  bytes: number;
}

/** A turn whose messages reach this many bytes is written at once; a message this large goes alone. */
const LARGE_BYTES = 256 * 1024;

/** The field name of a message in a stream entry (an entry holds one field per message). */
export const FIELD = Buffer.from('m');

/**
 * The Redis commands of one event-loop turn, written together: one pipeline (one socket write,
 * one read of the replies) per turn instead of a write and a reply per message. On the machines
 * Nereid was measured on, a system call costs 5–10 µs, and the roles' per-message writes and
 * wake-ups, not Redis, were their cost (bench/RESULTS.md, "bench/distributed — issue 13").
 *
 * Appends to a stream keep their order: one entry per message, or, for `merge` appends
 * (mailboxes, whose entries are never acked), one entry holding all of the turn's messages to
 * that stream, in order. Every append of a turn is written before the turn's acks, so
 * an ack never overtakes the response it follows. When the turn's pipeline fails or times out
 * (`timed`), every command of it fails.
 *
 * A reader that issues its next blocking read at the end of a turn takes the turn's commands
 * along (`aheadOf`): they go ahead of the read on the reader's own connection, in the same
 * write, so that a turn that reads and answers costs one write, not two. Redis answers them at
 * once (the read blocks after them). The port's commands keep their order across connections:
 * a pipeline goes on another connection than the one before only once that one has answered.
 */
export class RedisOutbox {
  private entries: Entry[] = [];
  /** Per stream key: the turn's merged entry of that stream. */
  private merged = new Map<string, Entry>();
  private acks = new Map<string, Acks>();
  private extra: Array<{ args: [string, ...Array<string | number>]; waiter: Waiter }> = [];
  private bytes = 0;
  /** Bytes written and not answered yet: a pipeline waits behind them, so its timeout counts them. */
  private inflight = 0;
  private scheduled = false;
  /** Pipelines written and not answered yet, and the connection of the last one. */
  private unanswered = 0;
  private lastConn?: Redis;
  /** A flush waits for the answers of pipelines on another connection (the order holds). */
  private waiting = false;
  /** Readers about to issue their next read with the turn's commands ahead of it (`hold`). */
  private holds = 0;

  constructor(
    private readonly cmd: Redis,
    /** Bounds a pipeline's wait with the port's timeout (the bytes ahead of its answer decide how long it may take). */
    private readonly timed: <T>(bytes: number, command: Promise<T>) => Promise<T>,
  ) {}

  /** Appends `data` to the stream `key`: its own entry, or (`merge`) the turn's shared entry of that stream. */
  append(key: string, data: Buffer, merge: boolean): Promise<void> {
    if (data.length >= LARGE_BYTES && this.flush() && this.mayWriteOn(this.cmd)) {
      // What was waiting went first (the order holds), then this alone: no copy into a turn's buffer.
      // (When the order does not allow it yet, it joins the turn, written once it may be.)
      return new Promise<void>((resolve, reject) => {
        this.write({ entries: [{ key, messages: [data], waiters: [{ resolve, reject }] }], bytes: data.length }, this.cmd);
      });
    }
    return new Promise<void>((resolve, reject) => {
      const waiter = { resolve, reject };
      const shared = merge ? this.merged.get(key) : undefined;
      if (shared) {
        shared.messages.push(data);
        shared.waiters.push(waiter);
      } else {
        const entry: Entry = { key, messages: [data], waiters: [waiter] };
        this.entries.push(entry);
        if (merge) this.merged.set(key, entry);
      }
      this.added(data.length);
    });
  }

  /** Acknowledges entry `id` of the stream `key` for `group`, and deletes it. */
  ack(key: string, group: string, id: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const k = `${key}\u0000${group}`;
      let a = this.acks.get(k);
      if (!a) this.acks.set(k, (a = { group, ids: [], waiters: [] }));
      a.ids.push(id);
      a.waiters.push({ resolve, reject });
      this.added(id.length);
    });
  }

  /** Any other command, in the turn's pipeline after its appends. */
  command(...args: [string, ...Array<string | number>]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.extra.push({ args, waiter: { resolve, reject } });
      this.added(16);
    });
  }

  private added(bytes: number): void {
    this.bytes += bytes;
    if (this.bytes >= LARGE_BYTES) {
      this.flush();
    } else if (!this.scheduled) {
      this.scheduled = true;
      // After the turn's I/O callbacks: what every socket read of this turn asked for goes in one write.
      setImmediate(() => {
        // A reader that holds the outbox takes the turn's commands along with its next read.
        if (this.holds > 0) this.scheduled = false;
        else this.flush();
      });
    }
  }

  /**
   * Keeps the turn's commands for a reader that will issue its next read at the end of the turn
   * (`aheadOf`) instead of writing them on their own; the returned function ends the hold, and
   * writes what is left when no other reader holds the outbox.
   */
  hold(): () => void {
    this.holds++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      if (--this.holds === 0 && this.pending && !this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    };
  }

  /**
   * Writes what the turn has gathered so far (now, not at the turn's end), on the port's command
   * connection. False when it cannot yet: a pipeline on another connection has not answered, and
   * this one would overtake it (it is written once that one answers).
   */
  flush(): boolean {
    this.scheduled = false;
    if (!this.pending) return true;
    if (!this.mayWriteOn(this.cmd)) {
      this.waiting = true;
      return false;
    }
    this.write(this.take(), this.cmd);
    return true;
  }

  /**
   * Issues a reader's next read on its own connection `conn` (`issue` must write its command(s)
   * at once, as ioredis does on a ready connection) with what the turn has gathered written
   * ahead of it, in the same socket write, when the order allows; otherwise the read alone.
   */
  aheadOf<T>(conn: Redis, issue: () => Promise<T>): Promise<T> {
    if (!this.pending || conn.status !== 'ready' || !this.mayWriteOn(conn)) return issue();
    const socket = conn.stream;
    socket.cork();
    try {
      this.write(this.take(), conn);
      return issue();
    } finally {
      socket.uncork();
    }
  }

  /** Whether commands are gathered and not written yet. */
  get pending(): boolean {
    return this.entries.length > 0 || this.acks.size > 0 || this.extra.length > 0;
  }

  private mayWriteOn(conn: Redis): boolean {
    return this.unanswered === 0 || this.lastConn === conn;
  }

  private take(): Turn {
    const turn = { entries: this.entries, acks: this.acks, extra: this.extra, bytes: this.bytes };
    this.entries = [];
    this.merged = new Map();
    this.acks = new Map();
    this.extra = [];
    this.bytes = 0;
    return turn;
  }

  /** Runs one pipeline on `conn`; each waiter hears its own commands' outcome, and all of them a failed pipeline's. */
  private write(turn: Turn, conn: Redis): void {
    const p: ChainableCommander = conn.pipeline();
    /** Each operation: its first command's index in the pipeline, its command count, its waiters. */
    const ops: Array<{ at: number; n: number; waiters: Waiter[] }> = [];
    let at = 0;
    for (const e of turn.entries) {
      const fields: Buffer[] = [];
      for (const m of e.messages) fields.push(FIELD, m);
      p.xadd(e.key, '*', ...fields);
      ops.push({ at: at++, n: 1, waiters: e.waiters });
    }
    for (const [k, a] of turn.acks ?? []) {
      const key = k.slice(0, k.indexOf('\u0000'));
      p.xack(key, a.group, ...a.ids).xdel(key, ...a.ids);
      ops.push({ at, n: 2, waiters: a.waiters });
      at += 2;
    }
    for (const e of turn.extra ?? []) {
      p.call(...e.args);
      ops.push({ at: at++, n: 1, waiters: [e.waiter] });
    }
    this.inflight += turn.bytes;
    this.unanswered++;
    this.lastConn = conn;
    const settled = (): void => {
      this.inflight -= turn.bytes;
      if (--this.unanswered === 0 && this.waiting) {
        this.waiting = false;
        this.flush();
      }
    };
    this.timed(this.inflight, p.exec()).then(
      (results) => {
        settled();
        for (const op of ops) {
          let err: unknown;
          for (let i = op.at; i < op.at + op.n && !err; i++) err = results?.[i]?.[0] ?? undefined;
          for (const w of op.waiters) {
            if (err) w.reject(err);
            else w.resolve();
          }
        }
      },
      (e: unknown) => {
        settled();
        for (const op of ops) for (const w of op.waiters) w.reject(e);
      },
    );
  }
}

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

  constructor(
    private readonly cmd: Redis,
    /** Bounds a pipeline's wait with the port's timeout (the bytes ahead of its answer decide how long it may take). */
    private readonly timed: <T>(bytes: number, command: Promise<T>) => Promise<T>,
  ) {}

  /** Appends `data` to the stream `key`: its own entry, or (`merge`) the turn's shared entry of that stream. */
  append(key: string, data: Buffer, merge: boolean): Promise<void> {
    if (data.length >= LARGE_BYTES) {
      // What is already waiting goes first (the order holds), then this alone: no copy into a turn's buffer.
      this.flush();
      return new Promise<void>((resolve, reject) => {
        this.write({ entries: [{ key, messages: [data], waiters: [{ resolve, reject }] }], bytes: data.length });
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
      setImmediate(() => this.flush());
    }
  }

  /** Writes what the turn has gathered so far (now, not at the turn's end). */
  flush(): void {
    this.scheduled = false;
    if (this.entries.length === 0 && this.acks.size === 0 && this.extra.length === 0) return;
    const turn = { entries: this.entries, acks: this.acks, extra: this.extra, bytes: this.bytes };
    this.entries = [];
    this.merged = new Map();
    this.acks = new Map();
    this.extra = [];
    this.bytes = 0;
    this.write(turn);
  }

  /** Runs one pipeline; each waiter hears its own commands' outcome, and all of them a failed pipeline's. */
  private write(turn: {
    entries: Entry[];
    acks?: Map<string, Acks>;
    extra?: Array<{ args: [string, ...Array<string | number>]; waiter: Waiter }>;
    bytes: number;
  }): void {
    const p: ChainableCommander = this.cmd.pipeline();
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
    const settled = (): void => {
      this.inflight -= turn.bytes;
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

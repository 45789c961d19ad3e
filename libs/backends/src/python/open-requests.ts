import { InferenceError, type ExecutionItem, type InferenceResponse } from '@nereid/protocol';

interface OpenRequest {
  item: ExecutionItem;
  batch: number;
  /** Default mode: a response sent without the final flag, delivered when the final flag comes. */
  held?: InferenceResponse;
  detach?: () => void;
}

/**
 * How long a request runs before its abort signal is watched. Reading `request.signal` may create
 * it (the HTTP and gRPC fronts make it lazily: an AbortController, several microseconds with the
 * listener), and nearly every request ends long before this, so only long-running ones
 * (decoupled streams, slow models) pay for it; a client that went away before is seen then too,
 * because an already aborted signal cancels at once.
 */
export const WATCH_AFTER_MS = 5;

/**
 * Requests handed to a stub and not closed yet (final response sent or failed). Keys are numbers:
 * a batch takes the range [batch id, batch id + size), so request `i` of batch `b` is `b + i`.
 */
export class OpenRequests {
  private readonly open = new Map<number, OpenRequest>();
  /** Keys added since the watch timer was armed; their signals are read when it fires. */
  private unwatched: number[] = [];
  private timer?: NodeJS.Timeout;
  /**
   * Open watched requests by abort signal, one listener per signal: the requests of one gRPC stream
   * share its signal, and a listener each made node warn of a leak past ten requests in flight.
   */
  private readonly watchers = new Map<AbortSignal, { keys: Set<number>; stop: () => void }>();

  constructor(
    private readonly decoupled: boolean,
    private readonly modelName: string,
    /** Tells the stub that request `index` of `batch` was cancelled by its client. */
    private readonly onCancel: (batch: number, index: number) => void,
  ) {}

  get size(): number {
    return this.open.size;
  }

  /** Tracks request `key - batch` of `batch`; `onCancel` runs when its client goes away while it is open (see WATCH_AFTER_MS). */
  add(key: number, batch: number, item: ExecutionItem): void {
    this.open.set(key, { item, batch });
    this.unwatched.push(key);
    if (this.timer === undefined) {
      this.timer = setTimeout(() => this.watch(), WATCH_AFTER_MS);
      this.timer.unref();
    }
  }

  /** The requests of `batch` still open, in batch order. */
  itemsOf(batch: number): ExecutionItem[] {
    const items: ExecutionItem[] = [];
    for (const entry of this.open.values()) if (entry.batch === batch) items.push(entry.item);
    return items;
  }

  /** The requests still open (a sequence batcher's padding rows left out): those a dead stub fails. */
  requests(): ExecutionItem['request'][] {
    const requests: ExecutionItem['request'][] = [];
    for (const entry of this.open.values()) if (!entry.item.request.padding) requests.push(entry.item.request);
    return requests;
  }

  requestOf(key: number): ExecutionItem['request'] | undefined {
    return this.open.get(key)?.item.request;
  }

  fail(key: number, error: InferenceError): void {
    const entry = this.close(key);
    entry?.item.sink.fail(error);
  }

  /** Fails the given requests (default: every open one). */
  failAll(error: InferenceError, keys: Iterable<number> = [...this.open.keys()]): void {
    for (const key of keys) this.fail(key, error);
  }

  /** Fails requests `first` to `first + count - 1` that are still open. */
  failRange(error: InferenceError, first: number, count: number): void {
    for (let key = first; key < first + count; key++) this.fail(key, error);
  }

  /** A response (or a bare final flag) for one request, per the model's transaction policy. */
  deliver(key: number, response: InferenceResponse | undefined, final: boolean): void {
    const entry = this.open.get(key);
    if (!entry) return;
    if (this.decoupled) {
      if (final) this.close(key);
      if (response !== undefined || final) entry.item.sink.send(response, final);
      return;
    }
    if (!final) {
      entry.held = response;
      return;
    }
    this.close(key);
    const answer = response ?? entry.held;
    if (answer) entry.item.sink.send(answer, true);
    else entry.item.sink.fail(InferenceError.internal(`python model '${this.modelName}' closed a request without sending a response`));
  }

  /** Subscribes to the abort signals of the requests added before the timer fired and still open. */
  private watch(): void {
    this.timer = undefined;
    const keys = this.unwatched;
    this.unwatched = [];
    for (const key of keys) {
      const entry = this.open.get(key);
      const signal = entry?.item.request.signal;
      if (!entry || !signal) continue;
      if (signal.aborted) {
        this.onCancel(entry.batch, key - entry.batch);
        continue;
      }
      this.subscribe(signal, key, entry);
    }
  }

  /** Adds `key` to its signal's watch, listening to the signal when it is the first. */
  private subscribe(signal: AbortSignal, key: number, entry: OpenRequest): void {
    let watch = this.watchers.get(signal);
    if (watch === undefined) {
      const keys = new Set<number>();
      const onAbort = (): void => {
        this.watchers.delete(signal);
        for (const k of [...keys]) {
          const open = this.open.get(k);
          if (open) this.onCancel(open.batch, k - open.batch);
        }
      };
      signal.addEventListener('abort', onAbort, { once: true });
      watch = { keys, stop: () => signal.removeEventListener('abort', onAbort) };
      this.watchers.set(signal, watch);
    }
    const w = watch;
    w.keys.add(key);
    entry.detach = () => {
      w.keys.delete(key);
      if (w.keys.size > 0 || this.watchers.get(signal) !== w) return;
      this.watchers.delete(signal);
      w.stop();
    };
  }

  private close(key: number): OpenRequest | undefined {
    const entry = this.open.get(key);
    if (!entry) return undefined;
    this.open.delete(key);
    entry.detach?.();
    return entry;
  }
}

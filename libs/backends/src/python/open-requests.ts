import { InferenceError, type ExecutionItem, type InferenceResponse } from '@nereid/protocol';

interface OpenRequest {
  item: ExecutionItem;
  /** Default mode: a response sent without the final flag, delivered when the final flag comes. */
  held?: InferenceResponse;
  detach?: () => void;
}

/** Requests handed to a stub and not closed yet (final response sent or failed), by `<batch>:<index>`. */
export class OpenRequests {
  private readonly open = new Map<string, OpenRequest>();

  constructor(
    private readonly decoupled: boolean,
    private readonly modelName: string,
  ) {}

  static key(batch: number, index: number): string {
    return `${batch}:${index}`;
  }

  get size(): number {
    return this.open.size;
  }

  /** Tracks a request; `onCancel` runs when the client goes away while it is open. */
  add(key: string, item: ExecutionItem, onCancel: () => void): void {
    const entry: OpenRequest = { item };
    const signal = item.request.signal;
    if (signal) {
      if (signal.aborted) onCancel();
      else {
        signal.addEventListener('abort', onCancel, { once: true });
        entry.detach = () => signal.removeEventListener('abort', onCancel);
      }
    }
    this.open.set(key, entry);
  }

  requestOf(key: string): ExecutionItem['request'] | undefined {
    return this.open.get(key)?.item.request;
  }

  fail(key: string, error: InferenceError): void {
    const entry = this.close(key);
    entry?.item.sink.fail(error);
  }

  failAll(error: InferenceError, keys: Iterable<string> = [...this.open.keys()]): void {
    for (const key of keys) this.fail(key, error);
  }

  /** A response (or a bare final flag) for one request, per the model's transaction policy. */
  deliver(key: string, response: InferenceResponse | undefined, final: boolean): void {
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

  private close(key: string): OpenRequest | undefined {
    const entry = this.open.get(key);
    if (!entry) return undefined;
    this.open.delete(key);
    entry.detach?.();
    return entry;
  }
}

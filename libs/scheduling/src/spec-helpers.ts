import { InferenceError, type ExecutionItem, type InferenceRequest, type InferenceResponse, type ResponseSink } from '@nereid/protocol';
import type { Tensor } from '@nereid/tensor';

/** What a sink received, in order. */
export type SinkEvent = { id: string; final: boolean; response?: InferenceResponse } | { id: string; error: InferenceError };

export interface RequestSpec {
  id: string;
  /** Shapes by input name; default { IN: [1, 4] }. */
  inputs?: Record<string, number[]>;
  priority?: number;
  timeoutUs?: number;
  /** The client's abort signal (abort it to cancel the request). */
  signal?: AbortSignal;
}

export function request(spec: RequestSpec): InferenceRequest {
  const inputs: Tensor[] = Object.entries(spec.inputs ?? { IN: [1, 4] }).map(([name, shape]) => ({
    name,
    datatype: 'FP32',
    shape,
    data: new Float32Array(shape.reduce((a, b) => a * b, 1)),
  }));
  return {
    id: spec.id,
    modelName: 'm',
    modelVersion: -1,
    inputs,
    parameters: {},
    sequenceId: 0n,
    sequenceStart: false,
    sequenceEnd: false,
    priority: spec.priority ?? 0,
    timeoutUs: spec.timeoutUs ?? 0,
    signal: spec.signal,
  };
}

/** Records every sink call of every request into one shared log. */
export class SinkLog {
  readonly events: SinkEvent[] = [];

  item(spec: RequestSpec): ExecutionItem {
    const id = spec.id;
    const sink: ResponseSink = {
      send: (response, final) => this.events.push({ id, final, response }),
      fail: (error) => this.events.push({ id, error }),
    };
    return { request: request(spec), sink };
  }

  errors(): { id: string; code: string; message: string }[] {
    return this.events.flatMap((e) => ('error' in e ? [{ id: e.id, code: e.error.code, message: e.error.message }] : []));
  }

  finals(): string[] {
    return this.events.flatMap((e) => ('final' in e && e.final ? [e.id] : []));
  }
}

interface Deferred {
  resolve(): void;
  reject(e: unknown): void;
}

/** An execute function whose batches finish when the test says so. */
export class FakeExecutor {
  readonly batches: { instance: number; ids: string[]; items: ExecutionItem[]; done: Deferred }[] = [];

  readonly execute = (instance: number, items: ExecutionItem[]): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      this.batches.push({ instance, ids: items.map((i) => i.request.id), items, done: { resolve, reject } });
    });

  ids(): string[][] {
    return this.batches.map((b) => b.ids);
  }

  /** Answers every request of batch `n` with a final response, then frees the instance. */
  finish(n: number): void {
    const b = this.batches[n];
    for (const item of b.items) item.sink.send(responseFor(item.request), true);
    b.done.resolve();
  }
}

export function responseFor(r: InferenceRequest): InferenceResponse {
  return { id: r.id, modelName: r.modelName, modelVersion: '1', outputs: [] };
}

/** Lets promise callbacks (instance freed after execute settles) run. */
export function settle(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}

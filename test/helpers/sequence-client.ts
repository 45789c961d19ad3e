/**
 * Sequence clients for the end-to-end tests of the sequence batcher: one INT32 value per request,
 * sent the way Triton's own clients send them (request parameters sequence_id, sequence_start,
 * sequence_end; nothing else), over HTTP JSON, gRPC ModelInfer and a gRPC ModelStreamInfer stream.
 */
import type * as grpc from '@grpc/grpc-js';
import { call, type Client, type Msg } from './grpc-client';

export type SequenceId = bigint | string;

export interface Step {
  model: string;
  id: SequenceId;
  value: number;
  start: boolean;
  end: boolean;
  /** Request id (the `id` field). */
  requestId?: string;
}

/** What one request got back: the OUTPUT value and the names of every output in the response. */
export interface Answer {
  value: number;
  outputs: string[];
}

/** An answer or the error text the server gave (HTTP: `error` of the body; gRPC: the status details). */
export type Outcome = { ok: true; answer: Answer } | { ok: false; status: number | string; message: string };

/** The HTTP JSON body of a step; a bigint id is written as an exact integer literal. */
export function httpBody(step: Step, extraInputs: Msg[] = [], shape: number[] = [1, 1]): string {
  const id = typeof step.id === 'bigint' ? step.id.toString() : JSON.stringify(step.id);
  const rest = JSON.stringify({
    inputs: [{ name: 'INPUT', datatype: 'INT32', shape, data: Array(shape.reduce((a, b) => a * b, 1)).fill(step.value) }, ...extraInputs],
  }).slice(1);
  const requestId = step.requestId === undefined ? '' : `"id":${JSON.stringify(step.requestId)},`;
  return `{${requestId}"parameters":{"sequence_id":${id},"sequence_start":${step.start},"sequence_end":${step.end}},${rest}`;
}

export async function httpStep(base: string, step: Step, signal?: AbortSignal): Promise<Outcome> {
  const r = await fetch(`${base}/v2/models/${step.model}/infer`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: httpBody(step), signal,
  });
  const body = (await r.json()) as Msg;
  if (r.status !== 200) return { ok: false, status: r.status, message: String(body.error) };
  const outputs = (body.outputs as Msg[]).map((o) => String(o.name));
  const out = (body.outputs as Msg[]).find((o) => o.name === 'OUTPUT');
  return { ok: true, answer: { value: Number(out?.data[0]), outputs } };
}

/** A ModelInferRequest for a step; `outputs` names OUTPUT, as Triton's example clients do. */
export function grpcRequest(step: Step): Msg {
  const v = Buffer.alloc(4);
  v.writeInt32LE(step.value);
  return {
    model_name: step.model,
    id: step.requestId ?? '',
    parameters: {
      sequence_id: typeof step.id === 'bigint' ? { int64_param: step.id.toString() } : { string_param: step.id },
      sequence_start: { bool_param: step.start },
      sequence_end: { bool_param: step.end },
    },
    inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1] }],
    outputs: [{ name: 'OUTPUT' }],
    raw_input_contents: [v],
  };
}

export function grpcAnswer(res: Msg): Answer {
  const outputs = (res.outputs as Msg[]).map((o) => String(o.name));
  const i = outputs.indexOf('OUTPUT');
  return { value: (res.raw_output_contents[i] as Buffer).readInt32LE(0), outputs };
}

export async function grpcStep(client: Client, step: Step): Promise<Outcome> {
  try {
    return { ok: true, answer: grpcAnswer(await call(client, 'ModelInfer', grpcRequest(step))) };
  } catch (e) {
    const err = e as grpc.ServiceError;
    return { ok: false, status: err.code, message: err.details };
  }
}

/**
 * A ModelStreamInfer stream: `send` writes a step (without waiting for earlier answers), and the
 * promise it returns settles with that step's answer, matched by request id.
 */
export class SequenceStream {
  private readonly stream: grpc.ClientDuplexStream<Msg, Msg>;
  private readonly waiting = new Map<string, (o: Outcome) => void>();
  private next = 0;
  readonly closed: Promise<void>;

  constructor(client: Client) {
    this.stream = client.ModelStreamInfer();
    this.stream.on('data', (m: Msg) => {
      const id = String(m.infer_response?.id ?? '');
      const settle = this.waiting.get(id);
      if (!settle) return;
      this.waiting.delete(id);
      settle(m.error_message ? { ok: false, status: 'stream', message: m.error_message } : { ok: true, answer: grpcAnswer(m.infer_response) });
    });
    this.closed = new Promise((resolve) => {
      this.stream.on('end', resolve);
      this.stream.on('error', () => resolve());
      this.stream.on('close', resolve);
    });
  }

  send(step: Step): Promise<Outcome> {
    const requestId = step.requestId ?? `s${this.next++}`;
    return new Promise((resolve) => {
      this.waiting.set(requestId, resolve);
      this.stream.write(grpcRequest({ ...step, requestId }));
    });
  }

  end(): void {
    this.stream.end();
  }

  /** The client goes away: the stream is cancelled with requests possibly in flight. */
  cancel(): void {
    this.stream.cancel();
  }
}

/** mulberry32: a small seeded generator, so every run sends the same sequences. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface PlannedSequence {
  id: SequenceId;
  values: number[];
}

/** `count` sequences of 1..`maxLength` values in [-100, 100], ids from `idOf`. */
export function planSequences(seed: number, count: number, maxLength: number, idOf: (k: number) => SequenceId): PlannedSequence[] {
  const next = seeded(seed);
  return Array.from({ length: count }, (_, k) => ({
    id: idOf(k),
    values: Array.from({ length: 1 + Math.floor(next() * maxLength) }, () => Math.floor(next() * 201) - 100),
  }));
}

/** The running sums a sequence's answers must give. */
export function runningSums(values: readonly number[]): number[] {
  let sum = 0;
  return values.map((v) => (sum += v));
}

export function stepsOf(model: string, seq: PlannedSequence): Step[] {
  return seq.values.map((value, i) => ({ model, id: seq.id, value, start: i === 0, end: i === seq.values.length - 1 }));
}

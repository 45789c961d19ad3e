/**
 * Steady load on `simple` for the distributed fault tests: clients (HTTP or gRPC, each bound to one
 * gateway) that send one request after another, each with its own INPUT0 so that the answer can be
 * checked exactly (OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1), and record every outcome:
 * the right answer, a wrong one, an error (its code and words), or no answer within `hangMs`.
 */
import * as grpc from '@grpc/grpc-js';
import { inferenceClient, type Client, type Msg } from './grpc-client';

export type OutcomeKind = 'ok' | 'wrong' | 'error' | 'hang';

export interface Outcome {
  client: number;
  proto: 'http' | 'grpc';
  /** The gateway's HTTP or gRPC port. */
  port: number;
  /** Date.now() when sent and when answered (or given up on). */
  sent: number;
  done: number;
  kind: OutcomeKind;
  /** For errors: HTTP status or gRPC status name, and the error's words. */
  code?: string;
  message?: string;
}

export interface LoadTarget {
  proto: 'http' | 'grpc';
  /** The gateway's HTTP port (http) or gRPC port (grpc). */
  port: number;
}

const range = (n: number, f: (i: number) => number): number[] => Array.from({ length: n }, (_, i) => f(i));

/** gRPC status numbers by name. */
const GRPC_NAMES = new Map(Object.entries(grpc.status).filter(([, v]) => typeof v === 'number').map(([k, v]) => [v as number, k]));

export class SteadyLoad {
  readonly outcomes: Outcome[] = [];
  private running = false;
  private loops: Array<Promise<void>> = [];
  private readonly grpcClients = new Map<number, Client>();
  private next = 1;
  /** Per client, the request in flight (sent at), for a look at what is outstanding. */
  private readonly inFlight = new Map<number, number>();

  constructor(
    private readonly targets: LoadTarget[],
    private readonly options: { hangMs: number; thinkMs: number },
  ) {}

  start(): void {
    this.running = true;
    this.loops = this.targets.map((t, i) => this.loop(i, t));
  }

  /** Stops sending; resolves once every client's last request has its outcome. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    for (const c of this.grpcClients.values()) c.close();
  }

  /** Requests sent and not answered yet: their send times. */
  outstanding(): number[] {
    return [...this.inFlight.values()];
  }

  private async loop(client: number, target: LoadTarget): Promise<void> {
    while (this.running) {
      const base = (this.next++ % 100_000) * 16;
      const sent = Date.now();
      this.inFlight.set(client, sent);
      const result = target.proto === 'http' ? await this.http(target.port, base) : await this.grpc(target.port, base);
      this.inFlight.delete(client);
      this.outcomes.push({ client, proto: target.proto, port: target.port, sent, done: Date.now(), ...result });
      if (this.options.thinkMs > 0) await new Promise((r) => setTimeout(r, this.options.thinkMs));
    }
  }

  private static check(out0: number[] | undefined, out1: number[] | undefined, base: number): boolean {
    return (
      JSON.stringify(out0) === JSON.stringify(range(16, (i) => base + 2 * i)) &&
      JSON.stringify(out1) === JSON.stringify(range(16, () => base))
    );
  }

  private async http(port: number, base: number): Promise<Omit<Outcome, 'client' | 'proto' | 'port' | 'sent' | 'done'>> {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/v2/models/simple/infer`, {
        method: 'POST',
        signal: AbortSignal.timeout(this.options.hangMs),
        body: JSON.stringify({
          inputs: [
            { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: range(16, (i) => base + i) },
            { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: range(16, (i) => i) },
          ],
        }),
      });
      const body = (await res.json()) as Msg;
      if (res.status !== 200) return { kind: 'error', code: String(res.status), message: String(body.error) };
      const byName = new Map((body.outputs as Msg[]).map((o) => [o.name, o.data as number[]]));
      if (SteadyLoad.check(byName.get('OUTPUT0'), byName.get('OUTPUT1'), base)) return { kind: 'ok' };
      return { kind: 'wrong', message: JSON.stringify(body).slice(0, 300) };
    } catch (e) {
      const err = e as Error;
      if (err.name === 'TimeoutError') return { kind: 'hang', message: `no answer within ${this.options.hangMs} ms` };
      return { kind: 'error', code: 'connection', message: `${err.message}${(err.cause as Error)?.message ? `: ${(err.cause as Error).message}` : ''}` };
    }
  }

  private grpc(port: number, base: number): Promise<Omit<Outcome, 'client' | 'proto' | 'port' | 'sent' | 'done'>> {
    let client = this.grpcClients.get(port);
    if (!client) this.grpcClients.set(port, (client = inferenceClient(port)));
    const int32 = (v: number[]): Buffer => Buffer.from(new Int32Array(v).buffer);
    const request = {
      model_name: 'simple',
      inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16] })),
      raw_input_contents: [int32(range(16, (i) => base + i)), int32(range(16, (i) => i))],
    };
    return new Promise((resolve) => {
      client!.ModelInfer(request, new grpc.Metadata(), { deadline: Date.now() + this.options.hangMs }, (err: grpc.ServiceError | null, res: Msg) => {
        if (err) {
          if (err.code === grpc.status.DEADLINE_EXCEEDED) return resolve({ kind: 'hang', message: `no answer within ${this.options.hangMs} ms` });
          return resolve({ kind: 'error', code: GRPC_NAMES.get(err.code) ?? String(err.code), message: err.details });
        }
        const outs = (res.raw_output_contents as Buffer[]).map((b) => Array.from(new Int32Array(new Uint8Array(b).buffer)));
        const names = (res.outputs as Msg[]).map((o) => o.name);
        const ok = names.join() === 'OUTPUT0,OUTPUT1' && SteadyLoad.check(outs[0], outs[1], base);
        resolve({ kind: ok ? 'ok' : 'wrong', message: ok ? undefined : JSON.stringify({ names, outs }).slice(0, 300) });
      });
    });
  }
}

/** Successful answers per second in [from, to). */
export function okRate(outcomes: Outcome[], from: number, to: number): number {
  return outcomes.filter((o) => o.kind === 'ok' && o.done >= from && o.done < to).length / ((to - from) / 1000);
}

/**
 * The longest stretch of [from, until) in which no request got its right answer (from `from` to
 * the first answer, between two answers, or from the last one to `until`).
 */
export function longestGap(outcomes: Outcome[], from: number, until: number): { start: number; end: number } {
  const answered = outcomes.filter((o) => o.kind === 'ok' && o.done >= from && o.done < until).map((o) => o.done).sort((a, b) => a - b);
  let previous = from;
  let gap = { start: from, end: from };
  for (const t of [...answered, until]) {
    if (t - previous > gap.end - gap.start) gap = { start: previous, end: t };
    previous = t;
  }
  return gap;
}

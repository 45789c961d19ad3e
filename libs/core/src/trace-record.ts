import type { ExecutionStats, RequestTrace, TraceIngress } from '@nereid/protocol';
import { bf16ArrayToFloat32, fp16ArrayToFloat32, isBytesData, type Tensor } from '@nereid/tensor';
import type { TraceScope } from './trace-settings';

/**
 * Triton's trace timestamps come from a steady clock in nanoseconds (time since boot); Nereid
 * records performance.now() milliseconds and converts once, when the trace is written.
 */
const STEADY_BASE_NS = Number(process.hrtime.bigint()) - performance.now() * 1e6;

export function steadyNs(at: number): number {
  return Math.round(STEADY_BASE_NS + at * 1e6);
}

/** Wall-clock milliseconds since the epoch of a performance.now() time (OpenTelemetry spans). */
export function epochMs(at: number): number {
  return performance.timeOrigin + at;
}

export interface TraceMark {
  name: string;
  /** performance.now() ms. */
  at: number;
}

export interface TensorRecord {
  activity: 'TENSOR_QUEUE_INPUT' | 'TENSOR_BACKEND_OUTPUT';
  tensor: { name: string; data: string; shape: string; dtype: string };
}

/** Where a finished trace goes (a trace file, an OpenTelemetry exporter). */
export interface TraceSink {
  /** The request's trace began (OpenTelemetry opens its spans here, so that children can refer to them). */
  started?(trace: CoreTrace): void;
  finished(trace: CoreTrace): void;
}

/** A tensor's values as Triton's TENSORS trace prints them: comma-separated, row-major. */
function tensorText(t: Tensor): string {
  const d = t.data;
  if (isBytesData(d)) return d.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8')).join(',');
  if (t.datatype === 'FP16') return fp16ArrayToFloat32(d as Uint16Array).join(',');
  if (t.datatype === 'BF16') return bf16ArrayToFloat32(d as Uint16Array).join(',');
  if (t.datatype === 'BOOL') return Array.from(d as Uint8Array, (v) => (v ? 'true' : 'false')).join(',');
  return (d as ArrayLike<number | bigint> & { join(s: string): string }).join(',');
}

/**
 * One sampled request's trace: Triton's named timestamps and, at TENSORS level, its input and
 * output tensors. It is written once every holder has let go: the core (final response or error,
 * and the instance's execution report) and, for a request from a front door, the front door once
 * it has sent the answer.
 */
export class CoreTrace implements RequestTrace {
  readonly marks: TraceMark[] = [];
  readonly tensorRecords: TensorRecord[] = [];
  /** Set by an OpenTelemetry sink: its spans for this request. */
  spans?: unknown;
  /** Set by an OpenTelemetry sink: the model span's propagation headers (see RequestTrace.context). */
  context?: string;
  private holds: number;
  private written = false;

  constructor(
    readonly id: number,
    readonly modelName: string,
    readonly modelVersion: number,
    readonly requestId: string,
    readonly parent: CoreTrace | undefined,
    readonly scope: TraceScope,
    readonly ingress: TraceIngress | undefined,
    private readonly sink: TraceSink,
  ) {
    this.holds = ingress ? 2 : 1;
    if (ingress) {
      const p = ingress.protocol === 'HTTP' ? 'HTTP_RECV' : 'GRPC_WAITREAD';
      this.mark(`${p}_START`, ingress.recvStart);
      this.mark(`${p}_END`, ingress.recvEnd);
    }
  }

  mark(name: string, at: number = performance.now()): void {
    this.marks.push({ name, at });
  }

  /** The instance's report of the execution: Triton's four compute timestamps. */
  computed(stats: ExecutionStats): void {
    const inputEnd = stats.execStart + stats.inputNs / 1e6;
    const outputStart = inputEnd + stats.inferNs / 1e6;
    this.mark('COMPUTE_START', stats.execStart);
    this.mark('COMPUTE_INPUT_END', inputEnd);
    this.mark('COMPUTE_OUTPUT_START', outputStart);
    this.mark('COMPUTE_END', outputStart + stats.outputNs / 1e6);
  }

  tensors(activity: TensorRecord['activity'], tensors: readonly Tensor[]): void {
    if (!this.scope.tensors) return;
    for (const t of tensors) {
      this.tensorRecords.push({ activity, tensor: { name: t.name, data: tensorText(t), shape: t.shape.join(','), dtype: t.datatype } });
    }
  }

  /** The first or last time a timestamp of this name was recorded; undefined when none was. */
  timeOf(name: string, last = false): number | undefined {
    let found: number | undefined;
    for (const m of this.marks) {
      if (m.name !== name) continue;
      if (!last) return m.at;
      found = m.at;
    }
    return found;
  }

  release(): void {
    if (--this.holds > 0 || this.written) return;
    this.finish();
  }

  /** Writes the trace as it stands (at shutdown, for a request still in flight). */
  finish(): void {
    if (this.written) return;
    this.written = true;
    this.sink.finished(this);
  }

  /** Triton's trace JSON records of this request: model record, timestamps, tensors. */
  records(): string[] {
    const head: Record<string, unknown> = { id: this.id, model_name: this.modelName, model_version: this.modelVersion };
    if (this.requestId) head.request_id = this.requestId;
    if (this.parent) head.parent_id = this.parent.id;
    const out = [JSON.stringify(head)];
    if (this.scope.timestamps && this.marks.length > 0) {
      // In time order; timestamps recorded at the same instant keep the order they were recorded in.
      const sorted = this.marks.map((m, i) => ({ m, i })).sort((a, b) => a.m.at - b.m.at || a.i - b.i);
      const timestamps = sorted.map(({ m }) => ({ name: m.name, ns: steadyNs(m.at) }));
      out.push(JSON.stringify({ id: this.id, timestamps }));
    }
    for (const r of this.tensorRecords) out.push(JSON.stringify({ id: this.id, activity: r.activity, tensor: r.tensor }));
    return out;
  }
}

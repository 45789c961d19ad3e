import type { Tensor } from '@nereid/tensor';
import type { InferenceError } from './errors';

/** Values a request or response parameter may hold. */
export type ParameterValue = string | number | boolean | bigint;
export type Parameters = Record<string, ParameterValue>;

/** An output the client asked for, with its protocol-neutral options. */
export interface RequestedOutput {
  name: string;
  /** classification extension: return top-N "value:index[:label]" strings instead of the tensor. */
  classification?: number;
  /** Wire-level options (binary_data, shared memory...) kept for the front door that encodes. */
  parameters?: Parameters;
}

/** The internal inference request, the same whichever front door it came through. */
export interface InferenceRequest {
  /** Client-supplied id ('' when none). */
  id: string;
  /**
   * The id Nereid gave a request the client sent none for, set the first time a log line about the
   * request needs one (see the server's logger); every later line about it carries the same.
   */
  logId?: string;
  modelName: string;
  /** Requested version; -1 = the server picks the highest READY version. */
  modelVersion: number;
  inputs: Tensor[];
  /** undefined: every output of the model. */
  outputs?: RequestedOutput[];
  /** Custom parameters passed to the model (reserved keys removed). */
  parameters: Parameters;
  /** Correlation id; 0 / '' = not in a sequence. */
  sequenceId: bigint | string;
  sequenceStart: boolean;
  sequenceEnd: boolean;
  /** 0 = model default. */
  priority: number;
  /** Timeout in microseconds; 0 = none. */
  timeoutUs: number;
  /** Set by the transport when the client goes away; backends may poll it. */
  signal?: AbortSignal;
  /**
   * True once the client has gone away. Unlike `signal`, which a front door may build only when
   * it is read (a few microseconds), reading it costs nothing: schedulers check it on every
   * request. Absent on plain request objects; `isCancelled` then reads `signal`.
   */
  readonly cancelled?: boolean;
  /**
   * A row the sequence batcher adds to fill an empty slot of a direct-strategy batch (READY false,
   * zero data, id ''): it is executed with the batch but is no inference of its own, so statistics
   * do not count it and its responses go nowhere.
   */
  padding?: boolean;
  /**
   * Set by a front door only while tracing is on (trace extension): when the request arrived and
   * was read, and the client's W3C `traceparent`. A request that has it is traced through its send.
   */
  ingress?: TraceIngress;
  /** The request's trace, set by the core when the request is sampled; the front door adds its send timestamps. */
  trace?: RequestTrace;
  /**
   * The trace of the request this one was made for (an ensemble's step, a BLS call made with the
   * parent's `request.trace()`): its trace is that one's child. null: a request a model made that is
   * never traced on its own (a BLS call made without the parent's trace, or for a parent not traced:
   * Triton traces BLS calls only as children of a traced request).
   */
  readonly parentTrace?: RequestTrace | null;
}

/** What a front door knows of a traced request before the core sees it. */
export interface TraceIngress {
  protocol: 'HTTP' | 'GRPC';
  /** performance.now() ms: the request began to arrive, and was read. */
  recvStart: number;
  recvEnd: number;
  /** The client's W3C trace context headers, when sent. */
  traceparent?: string;
  tracestate?: string;
}

/** A sampled request's trace, as the front doors and the core's callers see it. */
export interface RequestTrace {
  /** Records a named timestamp (Triton's names, e.g. `HTTP_SEND_START`); `at` in performance.now() ms, now when left out. */
  mark(name: string, at?: number): void;
  /** The front door has sent the last response: once the core is done too, the trace is written. */
  release(): void;
  /**
   * OpenTelemetry mode: the W3C propagation headers of the request's model span as a JSON object's
   * text (`{"traceparent":"00-…"}`, plus `tracestate` when there is one), so that a model can
   * continue the trace (Triton's `TRITONSERVER_InferenceTraceContext`, python's
   * `request.trace().get_context()`). Undefined in Triton mode.
   */
  readonly context?: string;
}

/** Whether the client of `request` has gone away (see `InferenceRequest.cancelled`). */
export function isCancelled(request: InferenceRequest): boolean {
  return request.cancelled ?? request.signal?.aborted ?? false;
}

/** Time spent in each compute phase, in whole nanoseconds. */
export interface ComputeDurations {
  /** Preparing the backend's inputs. */
  inputNs: number;
  /** Running the model. */
  inferNs: number;
  /** Building the outputs. */
  outputNs: number;
}

/**
 * What executing one request cost, as the instance that executed it reports it (Triton's
 * TRITONBACKEND_ModelInstanceReportStatistics): its queue time ends at `execStart`, then come the
 * compute phases. Gaps between phases (waiting for a thread, for the event loop) count in none.
 */
export interface ExecutionStats extends ComputeDurations {
  /** When the instance began working on the request (performance.now() ms of the server process). */
  execStart: number;
}

/**
 * Execution statistics from Triton's four timestamps (performance.now() ms): the instance began
 * (`execStart`), the inputs were ready and the model started (`computeStart`), the model was done
 * (`computeEnd`), the outputs were built (`execEnd`). Durations are rounded to whole nanoseconds
 * here, once, so that the sums stay integers.
 */
export function executionStats(execStart: number, computeStart: number, computeEnd: number, execEnd: number): ExecutionStats {
  return {
    execStart,
    inputNs: nanos(computeStart - execStart),
    inferNs: nanos(computeEnd - computeStart),
    outputNs: nanos(execEnd - computeEnd),
  };
}

/** A duration in milliseconds as whole nanoseconds (never negative). */
export function nanos(ms: number): number {
  return ms > 0 ? Math.round(ms * 1e6) : 0;
}

export interface InferenceResponse {
  id: string;
  modelName: string;
  modelVersion: string;
  outputs: Tensor[];
  parameters?: Parameters;
}

/**
 * Where a model sends the responses to one request. A non-decoupled model sends exactly one
 * response with `final = true`; a decoupled model sends 0..n responses and then a final flag
 * (possibly with no response).
 */
export interface ResponseSink {
  send(response: InferenceResponse | undefined, final: boolean): void;
  fail(error: InferenceError): void;
  /**
   * The instance executed the request: what each phase cost. Called at most once per request, before
   * or after its final response (a decoupled model may answer before its `execute` returns); ignored
   * for a request that fails. Sinks that wrap another pass it on, also after the final response.
   */
  executed?(stats: ExecutionStats): void;
}

/** One request of a batch handed to a scheduler or a model instance, with where its responses go. */
export interface ExecutionItem {
  request: InferenceRequest;
  sink: ResponseSink;
  /** When the request entered the server (performance.now() ms), for queue statistics. */
  enqueuedAt?: number;
}

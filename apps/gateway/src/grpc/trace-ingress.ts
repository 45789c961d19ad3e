import type { Metadata } from '@grpc/grpc-js';
import type { InferenceRequest, RequestTrace, TraceIngress } from '@nereid/protocol';
import { noteMessageLogId, type RequestLog } from '../access-log';

/**
 * Tracing on: what the gRPC front door tells the tracer. grpc-js hands a message over once it is
 * read, so the wait/read timestamps are both that moment; `traceparent` and `tracestate` come from
 * the metadata (several `tracestate` entries are one list).
 */
export function grpcIngress(metadata: Metadata): TraceIngress {
  const now = performance.now();
  const v = metadata.get('traceparent')[0];
  const state = metadata.get('tracestate').filter((s): s is string => typeof s === 'string');
  return {
    protocol: 'GRPC',
    recvStart: now,
    recvEnd: now,
    traceparent: typeof v === 'string' ? v : undefined,
    tracestate: state.length > 0 ? state.join(',') : undefined,
  };
}

/** Sends a traced request's answer between GRPC_SEND_START and GRPC_SEND_END; `last`: the front door is done with the trace. */
export function sendTraced(trace: RequestTrace | undefined, last: boolean, send: () => void): void {
  if (trace === undefined) return send();
  trace.mark('GRPC_SEND_START');
  send();
  trace.mark('GRPC_SEND_END');
  if (last) trace.release();
}

/**
 * The request's id for the log (the client's, else one assigned, noted on its `message` for the
 * access log) and, when verbose, a line for its arrival.
 */
export function grpcLogArrival(log: RequestLog | undefined, request: InferenceRequest, message: object): string {
  if (log === undefined || (!log.verbose && !log.access)) return request.id;
  const id = log.idOf(request);
  if (log.access && !request.id) noteMessageLogId(message, id);
  if (log.verbose) log.request('verbose', id, `GRPC infer request for model '${request.modelName}'`);
  return id;
}

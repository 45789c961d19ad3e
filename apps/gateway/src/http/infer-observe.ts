import type { IncomingMessage, ServerResponse } from 'node:http';
import type { InferenceRequest, TraceIngress } from '@nereid/protocol';
import { noteRequestId, type RequestLog } from '../access-log';

const RECV_START = Symbol('nereid.recvStart');

type TimedRequest = IncomingMessage & { [RECV_START]?: number };

/** Tracing on: the request's arrival, noted before its body is read. */
export function noteArrival(req: IncomingMessage): void {
  (req as TimedRequest)[RECV_START] = performance.now();
}

/** Tracing on: what the HTTP front door tells the tracer (receive timestamps, the client's `traceparent`). */
export function httpIngress(req: IncomingMessage): TraceIngress {
  const now = performance.now();
  const { traceparent, tracestate } = req.headers;
  return {
    protocol: 'HTTP',
    recvStart: (req as TimedRequest)[RECV_START] ?? now,
    recvEnd: now,
    traceparent: Array.isArray(traceparent) ? traceparent[0] : traceparent,
    // Several tracestate headers are one list (W3C Trace Context); node:http joins them with ', '.
    tracestate: Array.isArray(tracestate) ? tracestate.join(',') : tracestate,
  };
}

/**
 * A request's id for the log (the client's, else one assigned), noted for the access log; the
 * verbose log gets a line for the request.
 */
export function logArrival(log: RequestLog, res: ServerResponse, request: InferenceRequest, model: string): string {
  if (!log.access && !log.verbose) return request.id;
  const id = log.idOf(request);
  if (log.access) noteRequestId(res, id);
  if (log.verbose) log.request('verbose', id, `HTTP infer request for model '${model}'`);
  return id;
}

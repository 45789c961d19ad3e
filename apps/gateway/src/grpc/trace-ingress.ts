import type { Metadata } from '@grpc/grpc-js';
import type { RequestTrace, TraceIngress } from '@nereid/protocol';

/**
 * Tracing on: what the gRPC front door tells the tracer. grpc-js hands a message over once it is
 * read, so the wait/read timestamps are both that moment; `traceparent` comes from the metadata.
 */
export function grpcIngress(metadata: Metadata): TraceIngress {
  const now = performance.now();
  const v = metadata.get('traceparent')[0];
  return { protocol: 'GRPC', recvStart: now, recvEnd: now, traceparent: typeof v === 'string' ? v : undefined };
}

/** Sends a traced request's answer between GRPC_SEND_START and GRPC_SEND_END; `last`: the front door is done with the trace. */
export function sendTraced(trace: RequestTrace | undefined, last: boolean, send: () => void): void {
  if (trace === undefined) return send();
  trace.mark('GRPC_SEND_START');
  send();
  trace.mark('GRPC_SEND_END');
  if (last) trace.release();
}

import type { handleUnaryCall, ServerUnaryCall } from '@grpc/grpc-js';
import { toServiceError } from './grpc-status';

/** A unary RPC body: reads the decoded request, returns (or resolves to) the response object. */
export type UnaryBody<Req, Res> = (request: Req, call: ServerUnaryCall<Req, Res>) => Res | Promise<Res>;

/**
 * Adapts a body to grpc-js: the result becomes the response, any thrown/rejected error becomes the
 * call's status via the one error table (grpc-status.ts).
 */
export function unary<Req, Res>(body: UnaryBody<Req, Res>): handleUnaryCall<Req, Res> {
  return (call, callback) => {
    let result: Res | Promise<Res>;
    try {
      result = body(call.request, call);
    } catch (e) {
      callback(toServiceError(e));
      return;
    }
    if (result instanceof Promise) {
      result.then(
        (value) => callback(null, value),
        (e: unknown) => callback(toServiceError(e)),
      );
    } else {
      callback(null, result);
    }
  };
}

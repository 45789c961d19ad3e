import type { handleUnaryCall, sendUnaryData, ServerUnaryCall, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { InferenceCore, ResponseObserver, SystemSharedMemory } from '@nereid/core';
import { InferenceError } from '@nereid/protocol';
import { toServiceError } from './grpc-status';
import { decodeInferRequest, releaseSharedMemory, type DecodedInferRequest } from './infer-request';
import { encodeInferResponse } from './infer-response';
import { LazyAbort } from './lazy-abort';
import { handleStreamInfer } from './stream-infer';
import type { RequestLog } from '../access-log';
import { grpcIngress, grpcLogArrival, sendTraced } from './trace-ingress';
import type { WireModelInferRequest, WireModelInferResponse } from './wire-types';

export const DECOUPLED_UNARY_MESSAGE = "ModelInfer RPC doesn't support models with decoupled transaction policy";

/**
 * Unary ModelInfer: decode, reject decoupled models (they need the stream), run through the core,
 * encode. A client cancel aborts the request's signal.
 */
export function modelInfer(
  core: InferenceCore,
  sharedMemory?: SystemSharedMemory,
  log?: RequestLog,
  /** `--max-output-size` (output-size.ts); none: its default. */
  maxOutputBytes?: number,
): handleUnaryCall<WireModelInferRequest, WireModelInferResponse> {
  return (
    call: ServerUnaryCall<WireModelInferRequest, WireModelInferResponse>,
    callback: sendUnaryData<WireModelInferResponse>,
  ) => {
    const abort = new LazyAbort();
    call.once('cancelled', () => abort.abort());
    let decoded: DecodedInferRequest | undefined;
    let id = '';
    try {
      decoded = decodeInferRequest(call.request, sharedMemory);
      const { request } = decoded;
      if (core.tracing) request.ingress = grpcIngress(call.metadata);
      id = grpcLogArrival(log, request, call.request);
      abort.attach(request);
      if (core.isDecoupled(request.modelName, request.modelVersion)) {
        throw InferenceError.unsupported(DECOUPLED_UNARY_MESSAGE);
      }
      core.infer(request, unaryObserver(decoded, callback, log, id, maxOutputBytes));
    } catch (e) {
      releaseSharedMemory(decoded);
      callback(toServiceError(e));
    }
  };
}

/**
 * The unary call's side of the core: the response is encoded inside `onResponse`, so that an
 * encoding failure (an output region too small, say) is thrown back to the core, which counts the
 * request as failed and answers through `onError` (encoded after the core had settled, it was
 * counted a success).
 */
function unaryObserver(
  decoded: DecodedInferRequest,
  callback: sendUnaryData<WireModelInferResponse>,
  log: RequestLog | undefined,
  id: string,
  maxOutputBytes: number | undefined,
): ResponseObserver {
  let message: WireModelInferResponse | undefined;
  let answered = false;
  const answer = (send: () => void): void => {
    if (answered) return;
    answered = true;
    releaseSharedMemory(decoded);
    sendTraced(decoded.request.trace, true, send);
  };
  return {
    onResponse: (response, final) => {
      if (response) message = encodeInferResponse(response, undefined, decoded.sharedMemory, maxOutputBytes);
      if (!final) return;
      const m = message;
      if (m) answer(() => callback(null, m));
      else answer(() => callback(toServiceError(InferenceError.internal(`model '${decoded.request.modelName}' sent no response`))));
    },
    onError: (e) => {
      if (log?.verbose) log.request('verbose', id, `infer failed: ${e.message}`);
      answer(() => callback(toServiceError(e)));
    },
  };
}

export function inferHandlers(
  core: InferenceCore,
  sharedMemory?: SystemSharedMemory,
  log?: RequestLog,
  maxOutputBytes?: number,
): UntypedServiceImplementation {
  return {
    ModelInfer: modelInfer(core, sharedMemory, log, maxOutputBytes),
    ModelStreamInfer: handleStreamInfer(core, sharedMemory, log, maxOutputBytes),
  };
}

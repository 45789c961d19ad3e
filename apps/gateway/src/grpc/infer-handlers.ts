import type { handleUnaryCall, sendUnaryData, ServerUnaryCall, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { InferenceCore, SystemSharedMemory } from '@nereid/core';
import { InferenceError, type RequestTrace } from '@nereid/protocol';
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
): handleUnaryCall<WireModelInferRequest, WireModelInferResponse> {
  return (
    call: ServerUnaryCall<WireModelInferRequest, WireModelInferResponse>,
    callback: sendUnaryData<WireModelInferResponse>,
  ) => {
    const abort = new LazyAbort();
    call.once('cancelled', () => abort.abort());
    let promise;
    let decoded: DecodedInferRequest | undefined;
    let id = '';
    try {
      decoded = decodeInferRequest(call.request, sharedMemory);
      const { request } = decoded;
      if (core.tracing) request.ingress = grpcIngress(call.metadata);
      id = grpcLogArrival(log, request);
      abort.attach(request);
      if (core.isDecoupled(request.modelName, request.modelVersion)) {
        throw InferenceError.unsupported(DECOUPLED_UNARY_MESSAGE);
      }
      promise = core.inferOne(request);
    } catch (e) {
      releaseSharedMemory(decoded);
      callback(toServiceError(e));
      return;
    }
    const sharedMemoryUse = decoded.sharedMemory;
    const trace = (): RequestTrace | undefined => decoded?.request.trace;
    promise.then(
      (response) => {
        // An encoding failure answers the call too (left to the promise, it would hang the call).
        let message: WireModelInferResponse;
        try {
          message = encodeInferResponse(response, undefined, sharedMemoryUse);
        } catch (e) {
          sendTraced(trace(), true, () => callback(toServiceError(e)));
          return;
        } finally {
          releaseSharedMemory(decoded);
        }
        sendTraced(trace(), true, () => callback(null, message));
      },
      (e: unknown) => {
        releaseSharedMemory(decoded);
        if (log?.verbose) log.request('verbose', id, `infer failed: ${(e as Error).message}`);
        sendTraced(trace(), true, () => callback(toServiceError(e)));
      },
    );
  };
}

export function inferHandlers(core: InferenceCore, sharedMemory?: SystemSharedMemory, log?: RequestLog): UntypedServiceImplementation {
  return {
    ModelInfer: modelInfer(core, sharedMemory, log),
    ModelStreamInfer: handleStreamInfer(core, sharedMemory, log),
  };
}

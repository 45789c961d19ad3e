import type { handleUnaryCall, sendUnaryData, ServerUnaryCall, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { InferenceCore } from '@nereid/core';
import { InferenceError } from '@nereid/protocol';
import { toServiceError } from './grpc-status';
import { decodeInferRequest } from './infer-request';
import { encodeInferResponse } from './infer-response';
import { LazyAbort } from './lazy-abort';
import { handleStreamInfer } from './stream-infer';
import type { WireModelInferRequest, WireModelInferResponse } from './wire-types';

export const DECOUPLED_UNARY_MESSAGE = "ModelInfer RPC doesn't support models with decoupled transaction policy";

/**
 * Unary ModelInfer: decode, reject decoupled models (they need the stream), run through the core,
 * encode. A client cancel aborts the request's signal.
 */
export function modelInfer(core: InferenceCore): handleUnaryCall<WireModelInferRequest, WireModelInferResponse> {
  return (
    call: ServerUnaryCall<WireModelInferRequest, WireModelInferResponse>,
    callback: sendUnaryData<WireModelInferResponse>,
  ) => {
    const abort = new LazyAbort();
    call.once('cancelled', () => abort.abort());
    let promise;
    try {
      const { request } = decodeInferRequest(call.request);
      abort.attach(request);
      if (core.isDecoupled(request.modelName, request.modelVersion)) {
        throw InferenceError.unsupported(DECOUPLED_UNARY_MESSAGE);
      }
      promise = core.inferOne(request);
    } catch (e) {
      callback(toServiceError(e));
      return;
    }
    promise.then(
      (response) => {
        // An encoding failure answers the call too (left to the promise, it would hang the call).
        let message: WireModelInferResponse;
        try {
          message = encodeInferResponse(response);
        } catch (e) {
          callback(toServiceError(e));
          return;
        }
        callback(null, message);
      },
      (e: unknown) => callback(toServiceError(e)),
    );
  };
}

export function inferHandlers(core: InferenceCore): UntypedServiceImplementation {
  return {
    ModelInfer: modelInfer(core),
    ModelStreamInfer: handleStreamInfer(core),
  };
}

import { InferenceError, type InferenceRequest } from '@nereid/protocol';

/** Triton's request prefix on request-scoped messages. */
export function requestPrefix(request: InferenceRequest): string {
  return `[request id: ${request.id !== '' ? request.id : '<id_unknown>'}] `;
}

export function queueFullError(request: InferenceRequest): InferenceError {
  return InferenceError.unavailable(`${requestPrefix(request)}Exceeds maximum queue size`);
}

export function timeoutExpiredError(): InferenceError {
  return InferenceError.unavailable('Request timeout expired');
}

export function stoppingError(request: InferenceRequest): InferenceError {
  return InferenceError.unavailable(
    `${requestPrefix(request)}Server is stopping: model '${request.modelName}' is not accepting new requests`,
  );
}

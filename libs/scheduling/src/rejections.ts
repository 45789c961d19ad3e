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

/** A queued request whose client went away: removed before it ran (Triton: status CANCELLED). */
export function cancelledError(request: InferenceRequest): InferenceError {
  return new InferenceError('CANCELLED', `${requestPrefix(request)}Request was cancelled before it ran`);
}

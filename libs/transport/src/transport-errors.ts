import { InferenceError } from '@nereid/protocol';

/**
 * The words of the transport's errors, in one place (Nereid's own: Triton has no distributed
 * mode). A message that cannot be decoded is INTERNAL (a peer of this cluster sent it, not a
 * client); Redis trouble is UNAVAILABLE so that front doors answer 503 / UNAVAILABLE.
 */
export const TransportErrors = {
  badMessage: (why: string): InferenceError => InferenceError.internal(`transport: malformed message: ${why}`),
  unencodable: (why: string): InferenceError => InferenceError.internal(`transport: cannot encode message: ${why}`),
  redisUnavailable: (why: string): InferenceError =>
    InferenceError.unavailable(`the cluster's Redis is unavailable: ${why}`),
  portClosed: (): InferenceError => InferenceError.unavailable('transport: the message port is closed'),
};

/**
 * Buffers for large request bodies, reused from one request to the next: the pool shared with the
 * core's shared-memory inputs (libs/core/src/buffer-pool.ts explains why and the limits). The HTTP
 * fast path releases a body buffer only after the response is written and the model has finished
 * with the request.
 */
export { BufferPool as BodyBufferPool } from '@nereid/core';

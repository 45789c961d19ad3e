import type Redis from 'ioredis';
import type { RedisOptions } from 'ioredis';
import { InferenceError } from '@nereid/protocol';
import { TransportErrors } from './transport-errors';

/** How long a blocking read waits for new entries before it asks again. */
export const BLOCK_MS = 1000;
/** The pause after a failed read before the next try. */
export const RETRY_MS = 100;

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** One stream entry as XREAD / XREADGROUP / XAUTOCLAIM give it: its id, its fields and values. */
export type StreamEntry = [Buffer, Buffer[]];

/** ioredis settings of every connection: never queue a command for a Redis that is not there. */
export function connectionOptions(extra: RedisOptions = {}): RedisOptions {
  return {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    retryStrategy: (times: number) => Math.min(50 * times, 500),
    ...extra,
  };
}

/**
 * Connects `conn`; a failure says why (ioredis rejects `connect()` with "Connection is closed."
 * and reports the reason, e.g. WRONGPASS, as an 'error' event).
 */
export async function connectOrFail(conn: Redis): Promise<void> {
  let reason: unknown;
  const onError = (e: unknown): void => {
    reason ??= e;
  };
  conn.on('error', onError);
  try {
    await conn.connect();
  } catch (e) {
    conn.disconnect();
    const why = reason ?? e;
    throw TransportErrors.redisUnavailable((why as Error)?.message ?? String(why));
  } finally {
    conn.off('error', onError);
  }
}

/**
 * ioredis's words for a command it did not carry out, in plain ones (clients read them): with no
 * offline queue it refuses commands while disconnected ("Stream isn't writeable and
 * enableOfflineQueue options is false"), and it fails those in flight when the connection drops
 * ("Reached the max retries per request limit (which is 0). Refer to ...").
 */
export function connectionWords(message: string): string {
  if (/enableOfflineQueue/.test(message)) return 'not connected (reconnecting)';
  if (/max retries per request/i.test(message)) return 'the connection was lost';
  return message;
}

/** A failed Redis command as an InferenceError: Redis's own error replies are INTERNAL, the rest UNAVAILABLE. */
export function redisError(e: unknown): InferenceError {
  if (e instanceof InferenceError) return e;
  const err = e as Error;
  if (err?.name === 'ReplyError') return InferenceError.internal(`transport: Redis answered: ${err.message}`);
  return TransportErrors.redisUnavailable(connectionWords(err?.message ?? String(e)));
}

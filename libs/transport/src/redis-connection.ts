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

/**
 * `onError`, told each error once per `everyMs` (the next one says how often it recurred): while
 * Redis is down every reader retries ten times a second and every connection reconnects, each try
 * failing with the same words, which made some 25 log lines a second per process. Connection
 * trouble is told in plain words (connectionWords).
 */
export function quietErrors(onError: (e: unknown) => void, everyMs = 5000): (e: unknown) => void {
  const seen = new Map<string, { at: number; more: number }>();
  return (e: unknown) => {
    const message = connectionWords((e as Error)?.message ?? String(e));
    const now = Date.now();
    const last = seen.get(message);
    if (last && now - last.at < everyMs) {
      last.more++;
      return;
    }
    if (seen.size > 100) seen.clear();
    seen.set(message, { at: now, more: 0 });
    const more = last?.more ?? 0;
    if (more === 0 && message === (e as Error)?.message) return onError(e);
    onError(new Error(more > 0 ? `${message} (and ${more} more times since)` : message));
  };
}

/** A failed Redis command as an InferenceError: Redis's own error replies are INTERNAL, the rest UNAVAILABLE. */
export function redisError(e: unknown): InferenceError {
  if (e instanceof InferenceError) return e;
  const err = e as Error;
  if (err?.name === 'ReplyError') return InferenceError.internal(`transport: Redis answered: ${err.message}`);
  return TransportErrors.redisUnavailable(connectionWords(err?.message ?? String(e)));
}

import { readFileSync } from 'node:fs';
import type * as http from 'node:http';

/** Bounds on the connections of the HTTP front door, so that slow or idle clients cannot hold it. */
export interface HttpLimits {
  /** `--http-request-timeout-secs`: a request whose body has not fully arrived by then is answered 408 and its connection closed (0 = none). */
  requestTimeoutSecs: number;
  /** `--http-header-timeout-secs`: the same for the request line and headers (0 = none). */
  headerTimeoutSecs: number;
  /**
   * `--http-max-connections`: open connections of both front doors, HTTP and gRPC, at most (one
   * budget, connection-budget.ts); connections beyond it are closed as they arrive (0 = no limit).
   */
  maxConnections: number;
  /**
   * Pipelined requests of one connection started and not answered yet; a connection with more
   * stops being read until an answer is written (http/pipelining.ts).
   */
  maxUnansweredPerConnection: number;
  /**
   * `--http-max-inflight-body-bytes`: bytes of request bodies (and of their inflated forms) held at
   * once by all requests together; beyond it a body waits for room, and is answered 503 when none
   * comes within half the request timeout (at most 30 s) (http/body-budget.ts).
   */
  maxInflightBodyBytes: number;
}

export const DEFAULT_HTTP_LIMITS: Readonly<HttpLimits> = {
  requestTimeoutSecs: 60,
  headerTimeoutSecs: 30,
  maxConnections: 4096,
  maxUnansweredPerConnection: 16,
  maxInflightBodyBytes: 32 * 1024 * 1024,
};

/** How long a body waits for room in the budget: half the request timeout, at most 30 s. */
export function bodyWaitMs(limits: Pick<HttpLimits, 'requestTimeoutSecs'>): number {
  const half = (limits.requestTimeoutSecs * 1000) / 2;
  return half > 0 ? Math.min(half, 30_000) : 30_000;
}

/** Node's options for the limits. Node allows no header timeout above the request timeout. */
export function serverOptionsFor(limits: Pick<HttpLimits, 'requestTimeoutSecs' | 'headerTimeoutSecs'>): http.ServerOptions {
  const requestTimeout = limits.requestTimeoutSecs * 1000;
  let headersTimeout = limits.headerTimeoutSecs * 1000;
  if (requestTimeout > 0 && (headersTimeout === 0 || headersTimeout > requestTimeout)) headersTimeout = requestTimeout;
  const shortest = Math.min(...[requestTimeout, headersTimeout].filter((t) => t > 0));
  return {
    requestTimeout,
    headersTimeout,
    // Node looks for expired requests on this period (30 s by default): a quarter of the shortest
    // timeout keeps the overshoot small, at most once a second.
    connectionsCheckingInterval: Number.isFinite(shortest) ? Math.max(250, Math.min(1000, shortest / 4)) : 30_000,
  };
}

/** The soft open-file limit of this process (Linux /proc/self/limits); undefined where unknown. */
export function openFileLimit(limits = '/proc/self/limits'): number | undefined {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync(limits, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `--http-max-connections` within what the process's descriptors allow: at most three quarters of
 * the open-file limit, the rest left to model files, python stubs, logs and accept() itself. It
 * bounds the connections of both front doors together (connection-budget.ts). Beyond it new
 * connections are closed as they arrive, so that a flood of idle connections (1,100 half-open ones
 * against a limit of 1024, issue 16 attack 3) cannot take the descriptors that accept() and the
 * clients already connected need.
 */
export function connectionCap(configured: number, fileLimit = openFileLimit()): number {
  if (configured <= 0 || fileLimit === undefined) return configured;
  return Math.max(1, Math.min(configured, Math.floor((fileLimit * 3) / 4)));
}

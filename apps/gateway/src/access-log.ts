import type * as http from 'node:http';
import { ServerInterceptingCall, type ServerInterceptor } from '@grpc/grpc-js';
import type { InferenceRequest } from '@nereid/protocol';

/** One request as the access log records it. */
export interface AccessEntry {
  protocol: 'HTTP' | 'GRPC';
  /** HTTP method, or `RPC` for gRPC. */
  method: string;
  /** HTTP path (query left out), or the gRPC method path. */
  target: string;
  /** HTTP status, or gRPC status code. */
  status: number;
  durationMs: number;
  /** The client's address (`host:port`). */
  client: string;
  /** The model the request named, '' for none. */
  model: string;
  /** The request's id (the client's, or one assigned), '' for none. */
  requestId: string;
}

/**
 * The log as the front doors use it for requests: lines about a request carry its id, and the
 * optional access log writes one line per request. Implemented by the server's logger.
 */
export interface RequestLog {
  /** `--access-log`: one line per request. */
  readonly access: boolean;
  /** Whether verbose lines are wanted now (`log_verbose_level` ≥ 1). */
  readonly verbose: boolean;
  request(level: 'info' | 'warn' | 'error' | 'verbose', requestId: string, message: string): void;
  /**
   * A request's id for its log lines: the client's, else the one assigned to it (assigned now if it
   * has none yet; the response's id stays as sent).
   */
  idOf(request: InferenceRequest): string;
  accessLine(entry: AccessEntry): void;
}

const REQUEST_ID = Symbol('nereid.requestId');

type NotedResponse = http.ServerResponse & { [REQUEST_ID]?: string };

/** The front door noting a request's id for its access-log line. */
export function noteRequestId(res: http.ServerResponse, id: string): void {
  (res as NotedResponse)[REQUEST_ID] = id;
}

const LOG_ID = Symbol('nereid.logId');

type NotedMessage = object & { [LOG_ID]?: string };

/**
 * The gRPC front door noting the id it assigned to a request message that came without one, for
 * the call's access line (the interceptor sees the same message object the handler decodes).
 */
export function noteMessageLogId(message: object, id: string): void {
  (message as NotedMessage)[LOG_ID] = id;
}

/** The model a Triton path names (`/v2/models/<m>/...`), '' for none. */
function modelOf(path: string): string {
  if (!path.startsWith('/v2/models/')) return '';
  const end = path.indexOf('/', '/v2/models/'.length);
  const raw = path.slice('/v2/models/'.length, end === -1 ? undefined : end);
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

function clientOf(socket: { remoteAddress?: string; remotePort?: number } | null | undefined): string {
  const a = socket?.remoteAddress ?? '-';
  return a.includes(':') ? `[${a}]:${socket?.remotePort ?? ''}` : `${a}:${socket?.remotePort ?? ''}`;
}

/**
 * The HTTP access log: a second 'request' listener that only watches, so that neither the fast
 * path nor Nest's routes change; the line is written once the response is finished (or the
 * connection closed first).
 */
export function attachHttpAccessLog(server: http.Server, log: RequestLog): void {
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const start = performance.now();
    res.once('close', () => {
      const url = req.url ?? '';
      const q = url.indexOf('?');
      const path = q === -1 ? url : url.slice(0, q);
      log.accessLine({
        protocol: 'HTTP',
        method: req.method ?? '',
        target: path,
        status: res.writableFinished ? res.statusCode : 499,
        durationMs: performance.now() - start,
        client: clientOf(req.socket),
        model: modelOf(path),
        requestId: (res as NotedResponse)[REQUEST_ID] ?? '',
      });
    });
  });
}

/**
 * The gRPC access log: one line per call once its status is sent; the model and id come from
 * the (first) request message when it names them (the id assigned to it when it has none). Also gives each call's request id to the
 * verbose log.
 */
export function grpcAccessInterceptor(log: RequestLog): ServerInterceptor {
  return (method, call) => {
    const start = performance.now();
    let model = '';
    let requestId = '';
    let first: NotedMessage | undefined;
    return new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMessage: (message: unknown, nextMessage) => {
            if (model === '' && message && typeof message === 'object') {
              const m = message as { model_name?: unknown; id?: unknown; name?: unknown };
              if (typeof m.model_name === 'string') model = m.model_name;
              else if (typeof m.name === 'string') model = m.name;
              if (typeof m.id === 'string') requestId = m.id;
              first = message;
            }
            nextMessage(message);
          },
        }),
      sendStatus: (st, next) => {
        log.accessLine({
          protocol: 'GRPC',
          method: 'RPC',
          target: method.path,
          status: st.code,
          durationMs: performance.now() - start,
          client: call.getPeer(),
          model,
          // No id from the client: the one the front door assigned (noteMessageLogId).
          requestId: requestId || (first?.[LOG_ID] ?? ''),
        });
        next(st);
      },
    });
  };
}

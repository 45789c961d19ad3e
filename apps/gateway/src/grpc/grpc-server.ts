import { Server, ServerCredentials, ServerInterceptingCall, status, type ChannelOptions, type Metadata, type ServerInterceptor } from '@grpc/grpc-js';
import type { InferenceCore, SystemSharedMemory } from '@nereid/core';
import { grpcGroupOf } from '../api-groups';
import type { TokenStore } from '../auth-tokens';
import { grpcAccessInterceptor, type RequestLog } from '../access-log';
import { ApiGuard, type Restriction } from '../restrictions';
import { BodyBudget } from '../http/body-budget';
import { ConnectionBudget } from '../connection-budget';
import { connectionCap, DEFAULT_HTTP_LIMITS } from '../http-limits';
import { listenGrpc } from './grpc-listener';
import { healthHandlers } from './health-handlers';
import { inferHandlers } from './infer-handlers';
import { metadataHandlers } from './metadata-handlers';
import { budgetInterceptor, countingDeserializers } from './message-budget';
import { loadServices } from './proto-loader';
import { repositoryHandlers } from './repository-handlers';
import { scannedDeserializers } from './scanned-deserializers';
import { settingsHandlers } from './settings-handlers';
import { sharedMemoryHandlers } from './shared-memory-handlers';

/** Triton's default send limit: INT32_MAX bytes (grpc-js's own default would be 4 MiB). */
export const DEFAULT_MAX_MESSAGE_SIZE = 2147483647;

/**
 * The largest message received when neither `maxMessageSize` nor `maxInputSize` is set: 64 MiB,
 * Triton's default `--http-max-input-size`. Triton receives INT32_MAX; grpc-js inflates a compressed
 * message up to this limit, and let a prefix announcing 512 MiB be charged (issue 16).
 */
export const DEFAULT_MAX_RECEIVE_SIZE = 64 * 1024 * 1024;

/**
 * How long an HTTP/2 connection may stay without a call before grpc-js closes it (GOAWAY; clients
 * reconnect at their next call), unless set: 5 minutes. Idle connections would otherwise hold their
 * place in the connection budget for ever.
 */
export const DEFAULT_MAX_CONNECTION_IDLE_MS = 300_000;

/** How long close() waits for in-flight calls before cutting connections, unless set. */
export const SHUTDOWN_GRACE_MS = 5000;

/**
 * Keepalive / HTTP2 ping settings, named and defaulted like Triton's `--grpc-keepalive-*` flags.
 * grpc-js 1.14 servers act on `timeMs` and `timeoutMs`; the ping-policing options are passed as the
 * standard channel args (`grpc.keepalive_permit_without_calls`, `grpc.http2.*`) for parity and are
 * honoured by transports that implement them.
 */
export interface GrpcKeepaliveOptions {
  /** Ping interval on idle connections. Default 7200000 (2 h). */
  timeMs?: number;
  /** Time to wait for a ping ack before closing. Default 20000. */
  timeoutMs?: number;
  /** Allow keepalive pings with no call in flight. Default false. */
  permitWithoutCalls?: boolean;
  /** Pings allowed without data before throttling. Default 2. */
  maxPingsWithoutData?: number;
  /** Minimum interval between client pings without data. Default 300000. */
  minRecvPingIntervalWithoutDataMs?: number;
  /** Bad pings tolerated before the connection is closed. Default 2. */
  maxPingStrikes?: number;
}

export interface GrpcServerOptions {
  /** Bind address, e.g. `0.0.0.0` (Triton's `--grpc-address`). */
  host: string;
  /** Port; 0 picks a free one (the bound port is returned). Triton's default is 8001. */
  port: number;
  /**
   * `--grpc-max-message-size`: the largest message in bytes, both directions. Unset: messages sent up
   * to INT32_MAX (2147483647) like Triton, messages received up to `maxInputSize`.
   */
  maxMessageSize?: number;
  /** `--http-max-input-size`: the largest message received when `maxMessageSize` is unset. Default DEFAULT_MAX_RECEIVE_SIZE (64 MiB). */
  maxInputSize?: number;
  keepalive?: GrpcKeepaliveOptions;
  /** Close connections older than this (`--grpc-max-connection-age`). Default: never. */
  maxConnectionAgeMs?: number;
  /** Grace period after the max age (`--grpc-max-connection-age-grace`). Default: unlimited. */
  maxConnectionAgeGraceMs?: number;
  /** `--grpc-restricted-protocol`: groups that need the metadata `triton-grpc-protocol-<key>`. */
  restrictedProtocols?: readonly Restriction[];
  /**
   * How long close() lets in-flight calls finish (after GOAWAY) before cutting the connections.
   * Default SHUTDOWN_GRACE_MS; the CLI passes `--exit-timeout-secs`.
   */
  shutdownGraceMs?: number;
  /** `--auth-tokens-file`: bearer tokens (metadata `authorization: Bearer <token>`) and the groups each opens. */
  authTokens?: TokenStore;
  /** Folder holding grpc_service.proto, model_config.proto and health.proto. Default: repo `proto/`. */
  protoDir?: string;
  /** The server's client system shared memory regions (shared with HTTP); none: no region is known. */
  sharedMemory?: SystemSharedMemory;
  /** Request ids on log lines and the access log (`--access-log`); none: no request lines. */
  requestLog?: RequestLog;
  /**
   * The budget of request bytes held at once, shared with the HTTP front door's bodies
   * (`--http-max-inflight-body-bytes`): request messages are charged to it while their call (or,
   * on a stream, their request) runs, and refused with RESOURCE_EXHAUSTED when they do not fit.
   * None: a budget of this server's own of `maxInflightBodyBytes`.
   */
  bodyBudget?: BodyBudget;
  /** The size of the budget when none is shared. Default DEFAULT_HTTP_LIMITS.maxInflightBodyBytes (32 MiB). */
  maxInflightBodyBytes?: number;
  /**
   * The budget of open connections shared with the HTTP door (`--http-max-connections`): the gRPC
   * port's connections count in it too. None: a budget of this server's own of `maxConnections`.
   */
  connections?: ConnectionBudget;
  /** The size of the connection budget when none is shared, capped by the open-file limit. Default DEFAULT_HTTP_LIMITS.maxConnections. */
  maxConnections?: number;
  /**
   * `--http-request-timeout-secs`, in ms: a request message that has begun and not fully arrived by
   * then ends its call DEADLINE_EXCEEDED and gives back its budget (0: none). Default 60 s.
   */
  messageTimeoutMs?: number;
  /** `--http-header-timeout-secs`, in ms: a connection that has not begun HTTP/2 by then is closed (0: none). Default 30 s. */
  prefaceTimeoutMs?: number;
  /** `--grpc-max-connection-idle`: an HTTP/2 connection without a call for this long is closed (GOAWAY). Default DEFAULT_MAX_CONNECTION_IDLE_MS. */
  maxConnectionIdleMs?: number;
  /** `--max-output-size`: the most bytes of output data a response carries (output-size.ts); none: DEFAULT_MAX_OUTPUT_SIZE. */
  maxOutputSize?: number;
}

export interface GrpcServerHandle {
  port: number;
  /** Stops accepting calls (GOAWAY), lets in-flight ones finish (up to shutdownGraceMs), then closes. */
  close(): Promise<void>;
}

/** Concurrent calls (HTTP/2 streams) per gRPC connection. */
const MAX_CONCURRENT_STREAMS = 1024;

/** GrpcServerOptions → grpc-js channel options. */
export function channelOptionsOf(options: GrpcServerOptions): ChannelOptions {
  const ka = options.keepalive ?? {};
  const out: ChannelOptions = {
    'grpc.max_receive_message_length': maxReceiveOf(options),
    'grpc.max_send_message_length': options.maxMessageSize ?? DEFAULT_MAX_MESSAGE_SIZE,
    'grpc.keepalive_time_ms': ka.timeMs ?? 7200000,
    'grpc.keepalive_timeout_ms': ka.timeoutMs ?? 20000,
    'grpc.keepalive_permit_without_calls': (ka.permitWithoutCalls ?? false) ? 1 : 0,
    'grpc.http2.max_pings_without_data': ka.maxPingsWithoutData ?? 2,
    'grpc.http2.min_recv_ping_interval_without_data_ms': ka.minRecvPingIntervalWithoutDataMs ?? 300000,
    'grpc.http2.max_ping_strikes': ka.maxPingStrikes ?? 2,
    // Calls in flight per connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS; Node's default is
    // 2^32-1): a client that opens call after call without reading the answers waits for its own
    // earlier ones, as HTTP/2 flow control already holds each call's bytes (issue 16).
    'grpc.max_concurrent_streams': MAX_CONCURRENT_STREAMS,
  };
  const idle = options.maxConnectionIdleMs ?? DEFAULT_MAX_CONNECTION_IDLE_MS;
  if (idle > 0) out['grpc.max_connection_idle_ms'] = idle;
  if (options.maxConnectionAgeMs) out['grpc.max_connection_age_ms'] = options.maxConnectionAgeMs;
  if (options.maxConnectionAgeGraceMs) out['grpc.max_connection_age_grace_ms'] = options.maxConnectionAgeGraceMs;
  return out;
}

/** The largest message received: `--grpc-max-message-size`, else `--http-max-input-size`. */
export function maxReceiveOf(options: Pick<GrpcServerOptions, 'maxMessageSize' | 'maxInputSize'>): number {
  return options.maxMessageSize ?? options.maxInputSize ?? DEFAULT_MAX_RECEIVE_SIZE;
}

/** The metadata value of `key` when it is sent once, as text; else undefined. */
function singleValue(metadata: Metadata, key: string): string | undefined {
  const values = metadata.get(key);
  return values.length === 1 && typeof values[0] === 'string' ? values[0] : undefined;
}

/** Triton's prefix of a restricted protocol's metadata key. */
const RESTRICTED_PROTOCOL_PREFIX = 'triton-grpc-protocol-';

/**
 * The one gate of --grpc-restricted-protocol: a call of a restricted group without its metadata
 * ends with Triton's UNAVAILABLE before any handler sees it.
 */
function restrictionInterceptor(restrictions: readonly Restriction[], tokens?: TokenStore): ServerInterceptor | undefined {
  const guard = new ApiGuard(restrictions, RESTRICTED_PROTOCOL_PREFIX);
  if (!guard.active && !tokens) return undefined;
  return (method, call) => {
    const group = grpcGroupOf(method.path);
    return new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, nextMetadata) => {
            const missing = guard.missingHeader(group, (key) => singleValue(metadata, key));
            if (missing !== undefined) {
              return call.sendStatus({ code: status.UNAVAILABLE, details: `This protocol is restricted, expecting header '${missing}'` });
            }
            const verdict = tokens?.check(group, singleValue(metadata, 'authorization'));
            if (verdict === 'unauthenticated') return call.sendStatus({ code: status.UNAUTHENTICATED, details: 'This protocol requires a valid bearer token' });
            if (verdict === 'forbidden') return call.sendStatus({ code: status.PERMISSION_DENIED, details: 'This token does not open this protocol' });
            nextMetadata(metadata);
          },
        }),
    });
  };
}

function shutdown(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    timer.unref();
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * Starts Triton's gRPC front door (`inference.GRPCInferenceService` + `grpc.health.v1.Health`) on
 * grpc-js directly: every handler converts wire messages and delegates to the core. Serving
 * ModelInfer through @nestjs/microservices instead measured the same within noise (0.82-1.38x of
 * this path over three runs of `bench/grpc-infer/run.js --nest`); grpc-js directly keeps full
 * control of status codes, trailers, stream back-pressure and the health service.
 */
export async function startGrpcServer(core: InferenceCore, options: GrpcServerOptions): Promise<GrpcServerHandle> {
  const services = loadServices(options.protoDir);
  const budget = options.bodyBudget ?? new BodyBudget(options.maxInflightBodyBytes ?? DEFAULT_HTTP_LIMITS.maxInflightBodyBytes, 0);
  const interceptor = restrictionInterceptor(options.restrictedProtocols ?? [], options.authTokens);
  const interceptors = [
    // First: it reads the call's framing (message-budget.ts). A stream's requests give back their
    // charges one by one (stream-infer.ts).
    budgetInterceptor(budget, new Set([services.inference.ModelStreamInfer.path]), {
      maxMessageBytes: maxReceiveOf(options),
      messageTimeoutMs: options.messageTimeoutMs ?? DEFAULT_HTTP_LIMITS.requestTimeoutSecs * 1000,
    }),
    ...(interceptor ? [interceptor] : []),
    ...(options.requestLog?.access ? [grpcAccessInterceptor(options.requestLog)] : []),
  ];
  const server = new Server({ ...channelOptionsOf(options), interceptors });
  // ModelInfer messages are scanned before protobufjs decodes them (scanned-deserializers.ts).
  server.addService(countingDeserializers(scannedDeserializers(services.inference, maxReceiveOf(options))), {
    ...metadataHandlers(core),
    ...inferHandlers(core, options.sharedMemory, options.requestLog, options.maxOutputSize),
    ...repositoryHandlers(core),
    ...settingsHandlers(core),
    ...sharedMemoryHandlers(options.sharedMemory),
  });
  server.addService(services.health, healthHandlers(core));
  const connections = options.connections ?? new ConnectionBudget(connectionCap(options.maxConnections ?? DEFAULT_HTTP_LIMITS.maxConnections));
  const listener = await listenGrpc(server, ServerCredentials.createInsecure(), {
    host: options.host,
    port: options.port,
    connections,
    prefaceTimeoutMs: options.prefaceTimeoutMs ?? DEFAULT_HTTP_LIMITS.headerTimeoutSecs * 1000,
  });
  let closing: Promise<void> | undefined;
  return {
    port: listener.port,
    // No new connections first; then GOAWAY on those open and the grace for their calls.
    close: () => (closing ??= Promise.all([listener.close(), shutdown(server, options.shutdownGraceMs ?? SHUTDOWN_GRACE_MS)]).then(() => undefined)),
  };
}

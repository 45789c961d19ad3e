import type { Restriction } from '@nereid/gateway';
import { defaultTraceConfig, type TraceConfig } from './trace-config';

/** Options of `nereid serve`, named after tritonserver's flags. */
export interface ServeOptions {
  modelRepositories: string[];
  modelControlMode: 'none' | 'explicit' | 'poll';
  loadModels: string[];
  repositoryPollSecs: number;
  modelConfigName?: string;
  autoComplete: boolean;
  strictReadiness: boolean;
  exitOnError: boolean;
  exitTimeoutSecs: number;
  serverId: string;
  allowHttp: boolean;
  httpAddress: string;
  httpPort: number;
  httpMaxInputSize: number;
  /** `--http-request-timeout-secs`: time for a whole request to arrive (0 = none). */
  httpRequestTimeoutSecs: number;
  /** `--http-header-timeout-secs`: time for a request's headers to arrive (0 = none). */
  httpHeaderTimeoutSecs: number;
  /** `--http-max-connections`: open HTTP connections at most (0 = no limit). */
  httpMaxConnections: number;
  /** `--http-max-inflight-body-bytes`: bytes of request bodies held at once by all HTTP requests. */
  httpMaxInflightBodyBytes: number;
  /** `--max-output-size` (Nereid's own): bytes of output data a response carries at most, HTTP and gRPC. */
  maxOutputSize: number;
  allowGrpc: boolean;
  grpcAddress: string;
  grpcPort: number;
  /** `--grpc-max-message-size`: unset, messages are received up to --http-max-input-size and sent up to INT32_MAX. */
  grpcMaxMessageSize?: number;
  /** `--grpc-max-connection-idle` (ms): an HTTP/2 connection without a call this long is closed (0 = never); unset: 300000. */
  grpcMaxConnectionIdleMs?: number;
  grpcKeepalive: {
    timeMs: number;
    timeoutMs: number;
    permitWithoutCalls: boolean;
    maxPingsWithoutData: number;
    minRecvPingIntervalWithoutDataMs: number;
    maxPingStrikes: number;
  };
  grpcMaxConnectionAgeMs?: number;
  grpcMaxConnectionAgeGraceMs?: number;
  allowMetrics: boolean;
  metricsAddress?: string;
  metricsPort: number;
  /** `--allow-cpu-metrics` (default true): nv_cpu_utilization and the CPU memory gauges. */
  allowCpuMetrics: boolean;
  /** `--allow-gpu-metrics` (default true): the nv_gpu_* gauges, read from nvidia-smi every --metrics-interval-ms where one is on PATH. */
  allowGpuMetrics: boolean;
  /** `--metrics-interval-ms` (default 2000): how often the polled gauges (CPU, GPU) are refreshed. */
  metricsIntervalMs: number;
  /** `--metrics-config <key>=<value>` entries, in order (see libs/metrics/src/metrics-config.ts). */
  metricsConfig: string[];
  allowClientShm: boolean;
  /** `--http-restricted-api=<api>[,<api>...]:<key>=<value>` (repeatable). */
  httpRestrictedApis: Restriction[];
  /** `--grpc-restricted-protocol=<api>[,<api>...]:<key>=<value>` (repeatable). */
  grpcRestrictedProtocols: Restriction[];
  /** `--allow-model-file-overrides`: repository loads may write model files (`file:` parameters). */
  allowModelFileOverrides: boolean;
  /** `--auth-tokens-file=<path>`: hashed bearer tokens and the API groups each opens; re-read on change. */
  authTokensFile?: string;
  logVerbose: number;
  logInfo: boolean;
  logWarning: boolean;
  logError: boolean;
  logFormat: 'default' | 'ISO8601' | 'json';
  logFile: string;
  /** `--log-dir`: the logging extension may set `log_file` to a file under this directory. */
  logDir?: string;
  /** `--access-log`: one log line per HTTP and gRPC request (method, model, status, duration, client, id). */
  accessLog: boolean;
  /** `--role`: distributed mode's roles of this process (gateway, scheduler, worker); empty: embedded. */
  roles: string[];
  /** `--redis`: the Redis URL of distributed mode. */
  redis?: string;
  /** `--trace-config` (and the deprecated `--trace-*` flags). */
  trace: TraceConfig;
  /** `--backend-config=<backend>,<k>=<v>`; global settings under the key ''. */
  backendConfig: Record<string, Record<string, string>>;
  pythonExecutable?: string;
}

export function defaultServeOptions(): ServeOptions {
  return {
    modelRepositories: [],
    modelControlMode: 'none',
    loadModels: [],
    repositoryPollSecs: 15,
    autoComplete: true,
    strictReadiness: true,
    exitOnError: false,
    exitTimeoutSecs: 30,
    serverId: 'triton',
    allowHttp: true,
    httpAddress: '0.0.0.0',
    httpPort: 8000,
    httpMaxInputSize: 64 * 1024 * 1024,
    httpRequestTimeoutSecs: 60,
    httpHeaderTimeoutSecs: 30,
    httpMaxConnections: 4096,
    httpMaxInflightBodyBytes: 32 * 1024 * 1024,
    maxOutputSize: 2147483647,
    allowGrpc: true,
    grpcAddress: '0.0.0.0',
    grpcPort: 8001,
    grpcKeepalive: {
      timeMs: 7200000,
      timeoutMs: 20000,
      permitWithoutCalls: false,
      maxPingsWithoutData: 2,
      minRecvPingIntervalWithoutDataMs: 300000,
      maxPingStrikes: 2,
    },
    allowMetrics: true,
    metricsPort: 8002,
    allowCpuMetrics: true,
    allowGpuMetrics: true,
    metricsIntervalMs: 2000,
    metricsConfig: [],
    allowClientShm: false,
    httpRestrictedApis: [],
    grpcRestrictedProtocols: [],
    allowModelFileOverrides: false,
    logVerbose: 0,
    logInfo: true,
    logWarning: true,
    logError: true,
    logFormat: 'default',
    logFile: '',
    accessLog: false,
    roles: [],
    trace: defaultTraceConfig(),
    backendConfig: {},
  };
}

import { parseRestriction, type Restriction } from '@nereid/gateway';
import { parseMetricsConfig } from '@nereid/metrics';
import { defaultServeOptions, type ServeOptions } from './cli-options';
import { applyTraceConfig } from './trace-config';

/** A command-line mistake: printed with the usage hint, exit code 2. */
export class UsageError extends Error {}

type Handler = (o: ServeOptions, value: string, flag: string) => void;

interface FlagSpec {
  /** false: takes no value (`--disable-auto-complete-config`); 'bool': value optional, defaults to true. */
  arg: true | false | 'bool';
  apply: Handler;
  help: string;
}

function bool(value: string, flag: string): boolean {
  const v = value.toLowerCase();
  if (['true', 'on', '1'].includes(v)) return true;
  if (['false', 'off', '0'].includes(v)) return false;
  throw new UsageError(`Bad option: "--${flag}".\ninvalid value for bool option: ${value}`);
}

function int(value: string, flag: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (!/^-?[0-9]+$/.test(value.trim())) throw new UsageError(`Bad option: "--${flag}".\ninvalid value for integer option: ${value}`);
  const n = Number(value);
  if (n < min || n > max) throw new UsageError(`Bad option: "--${flag}".\nvalue ${value} is out of range [${min}, ${max}]`);
  return n;
}

function port(value: string, flag: string): number {
  return int(value, flag, 0, 65535);
}

function restriction(value: string, flag: string, list: Restriction[]): void {
  try {
    list.push(parseRestriction(value, flag, list));
  } catch (e) {
    throw new UsageError(`Bad option: "--${flag}".\n${(e as Error).message}`);
  }
}

function traceConfig(o: ServeOptions, value: string, flag: string): void {
  try {
    applyTraceConfig(o.trace, value);
  } catch (e) {
    throw new UsageError(`Bad option: "--${flag}".\n${(e as Error).message}`);
  }
}

/** Each entry is checked as it is given (the whole list is parsed again at start-up). */
function metricsConfig(o: ServeOptions, value: string, flag: string): void {
  try {
    parseMetricsConfig([...o.metricsConfig, value]);
  } catch (e) {
    throw new UsageError(`Bad option: "--${flag}".\n${(e as Error).message}`);
  }
  o.metricsConfig.push(value);
}

const ignored = (help: string): FlagSpec => ({ arg: true, apply: () => undefined, help: `${help} (accepted for compatibility; no effect)` });

const FLAGS: Record<string, FlagSpec> = {
  'model-repository': { arg: true, apply: (o, v) => o.modelRepositories.push(v), help: 'model repository path (repeatable)' },
  'model-store': { arg: true, apply: (o, v) => o.modelRepositories.push(v), help: 'alias of --model-repository' },
  'model-control-mode': {
    arg: true,
    apply: (o, v, f) => {
      const m = v.toLowerCase();
      if (m !== 'none' && m !== 'explicit' && m !== 'poll') {
        throw new UsageError(`Bad option: "--${f}".\nunknown model control mode '${v}': expected none, poll or explicit`);
      }
      o.modelControlMode = m;
    },
    help: 'none | poll | explicit (default none)',
  },
  'load-model': { arg: true, apply: (o, v) => o.loadModels.push(v), help: 'explicit mode: model to load at start-up (repeatable, * = all)' },
  'repository-poll-secs': { arg: true, apply: (o, v, f) => (o.repositoryPollSecs = int(v, f)), help: 'poll interval in poll mode (default 15)' },
  'model-config-name': {
    arg: true,
    apply: (o, v, f) => {
      if (!v || /\s/.test(v)) throw new UsageError(`Bad option: "--${f}".\nthe config name must be non-empty and contain no spaces`);
      o.modelConfigName = v;
    },
    help: 'use <model>/configs/<name>.pbtxt when present',
  },
  'disable-auto-complete-config': { arg: false, apply: (o) => (o.autoComplete = false), help: 'config.pbtxt must be complete' },
  'strict-model-config': {
    arg: 'bool',
    apply: (o, v, f) => {
      if (bool(v, f)) o.autoComplete = false;
    },
    help: 'DEPRECATED: true = --disable-auto-complete-config',
  },
  'strict-readiness': { arg: 'bool', apply: (o, v, f) => (o.strictReadiness = bool(v, f)), help: 'ready only when every model is ready (default true)' },
  'exit-on-error': { arg: 'bool', apply: (o, v, f) => (o.exitOnError = bool(v, f)), help: 'exit when a model fails to load at start-up (default false)' },
  'exit-timeout-secs': { arg: true, apply: (o, v, f) => (o.exitTimeoutSecs = int(v, f)), help: 'wait this long for in-flight requests at shutdown (default 30)' },
  id: { arg: true, apply: (o, v) => (o.serverId = v), help: "server identifier (default 'triton')" },
  'allow-http': { arg: 'bool', apply: (o, v, f) => (o.allowHttp = bool(v, f)), help: 'serve HTTP (default true)' },
  'http-address': { arg: true, apply: (o, v) => (o.httpAddress = v), help: 'HTTP bind address (default 0.0.0.0)' },
  'http-port': { arg: true, apply: (o, v, f) => (o.httpPort = port(v, f)), help: 'HTTP port (default 8000; 0 = any free port)' },
  'http-max-input-size': {
    arg: true,
    apply: (o, v, f) => (o.httpMaxInputSize = int(v, f, 1)),
    help: 'largest request body in bytes, and largest gRPC message received unless --grpc-max-message-size is set (default 67108864)',
  },
  'max-output-size': {
    arg: true,
    apply: (o, v, f) => (o.maxOutputSize = int(v, f, 1)),
    help: "Nereid's own: most bytes of output data in one response, HTTP and gRPC, outputs to client shared memory not counted (default 2147483647)",
  },
  'http-request-timeout-secs': {
    arg: true,
    apply: (o, v, f) => (o.httpRequestTimeoutSecs = int(v, f)),
    help: 'close a connection whose request has not fully arrived in this time; a gRPC call whose request message has not fully arrived ends DEADLINE_EXCEEDED (default 60; 0 = never)',
  },
  'http-header-timeout-secs': {
    arg: true,
    apply: (o, v, f) => (o.httpHeaderTimeoutSecs = int(v, f)),
    help: 'close a connection whose request headers (gRPC: HTTP/2 preface) have not arrived in this time (default 30; 0 = never)',
  },
  'http-max-connections': {
    arg: true,
    apply: (o, v, f) => (o.httpMaxConnections = int(v, f)),
    help: 'open connections at most, HTTP and gRPC together, within 3/4 of the open-file limit; more are closed as they arrive (default 4096; 0 = no limit)',
  },
  'http-max-inflight-body-bytes': {
    arg: true,
    apply: (o, v, f) => (o.httpMaxInflightBodyBytes = int(v, f, 1)),
    help: 'bytes of request bodies and gRPC messages (inflated size included) held at once; more wait, then 503 / RESOURCE_EXHAUSTED (default 33554432)',
  },
  'allow-grpc': { arg: 'bool', apply: (o, v, f) => (o.allowGrpc = bool(v, f)), help: 'serve gRPC (default true)' },
  'grpc-address': { arg: true, apply: (o, v) => (o.grpcAddress = v), help: 'gRPC bind address (default 0.0.0.0)' },
  'grpc-port': { arg: true, apply: (o, v, f) => (o.grpcPort = port(v, f)), help: 'gRPC port (default 8001)' },
  'grpc-max-message-size': { arg: true, apply: (o, v, f) => (o.grpcMaxMessageSize = int(v, f, 1, 2 ** 31 - 1)), help: 'largest gRPC message in bytes, both directions (default: received up to --http-max-input-size, sent up to 2147483647)' },
  'grpc-keepalive-time': { arg: true, apply: (o, v, f) => (o.grpcKeepalive.timeMs = int(v, f)), help: 'keepalive ping period ms (default 7200000)' },
  'grpc-keepalive-timeout': { arg: true, apply: (o, v, f) => (o.grpcKeepalive.timeoutMs = int(v, f)), help: 'keepalive ack timeout ms (default 20000)' },
  'grpc-keepalive-permit-without-calls': {
    arg: 'bool',
    apply: (o, v, f) => (o.grpcKeepalive.permitWithoutCalls = bool(v, f)),
    help: 'allow pings without calls (default false)',
  },
  'grpc-http2-max-pings-without-data': { arg: true, apply: (o, v, f) => (o.grpcKeepalive.maxPingsWithoutData = int(v, f)), help: '(default 2)' },
  'grpc-http2-min-recv-ping-interval-without-data': {
    arg: true,
    apply: (o, v, f) => (o.grpcKeepalive.minRecvPingIntervalWithoutDataMs = int(v, f)),
    help: 'ms (default 300000)',
  },
  'grpc-http2-max-ping-strikes': { arg: true, apply: (o, v, f) => (o.grpcKeepalive.maxPingStrikes = int(v, f)), help: '(default 2)' },
  'grpc-max-connection-idle': {
    arg: true,
    apply: (o, v, f) => (o.grpcMaxConnectionIdleMs = int(v, f)),
    help: 'ms: close (GOAWAY) a gRPC connection without a call for this long (default 300000; 0 = never)',
  },
  'grpc-max-connection-age': { arg: true, apply: (o, v, f) => (o.grpcMaxConnectionAgeMs = int(v, f)), help: 'ms' },
  'grpc-max-connection-age-grace': { arg: true, apply: (o, v, f) => (o.grpcMaxConnectionAgeGraceMs = int(v, f)), help: 'ms' },
  'allow-metrics': { arg: 'bool', apply: (o, v, f) => (o.allowMetrics = bool(v, f)), help: 'serve Prometheus metrics (default true)' },
  'metrics-address': { arg: true, apply: (o, v) => (o.metricsAddress = v), help: 'metrics bind address (default: --http-address)' },
  'metrics-port': { arg: true, apply: (o, v, f) => (o.metricsPort = port(v, f)), help: 'metrics port, path /metrics (default 8002)' },
  'allow-cpu-metrics': { arg: 'bool', apply: (o, v, f) => (o.allowCpuMetrics = bool(v, f)), help: 'export the CPU utilization and memory gauges (default true)' },
  'allow-gpu-metrics': { arg: 'bool', apply: (o, v, f) => (o.allowGpuMetrics = bool(v, f)), help: 'GPU metrics, read from nvidia-smi when one is on PATH (default true)' },
  'metrics-interval-ms': { arg: true, apply: (o, v, f) => (o.metricsIntervalMs = int(v, f, 1)), help: 'refresh interval of the polled metrics (CPU), ms (default 2000)' },
  'metrics-config': {
    arg: true,
    apply: (o, v, f) => metricsConfig(o, v, f),
    help: '<setting>=<value> (repeatable): counter_latencies, histogram_latencies, summary_latencies, summary_quantiles, nereid_histograms, latency_buckets_ms, batch_size_buckets, first_response_histogram_buckets',
  },
  'allow-client-shm': { arg: 'bool', apply: (o, v, f) => (o.allowClientShm = bool(v, f)), help: 'let clients register system shared memory regions under /dev/shm and use them for tensors (default false)' },
  'http-restricted-api': {
    arg: true,
    apply: (o, v, f) => restriction(v, f, o.httpRestrictedApis),
    help: '<api>[,<api>...]:<header>=<value>: these API groups need the header (repeatable)',
  },
  'grpc-restricted-protocol': {
    arg: true,
    apply: (o, v, f) => restriction(v, f, o.grpcRestrictedProtocols),
    help: "<api>[,<api>...]:<key>=<value>: these groups need metadata 'triton-grpc-protocol-<key>' (repeatable)",
  },
  'allow-model-file-overrides': {
    arg: 'bool',
    apply: (o, v, f) => (o.allowModelFileOverrides = bool(v, f)),
    help: "repository loads may write model files ('file:' parameters) (default false)",
  },
  'auth-tokens-file': {
    arg: true,
    apply: (o, v) => (o.authTokensFile = v),
    help: "lines '<sha256 hex of a token> <api>[,<api>...]|*': these groups need 'Authorization: Bearer <token>' (re-read on change)",
  },
  'log-verbose': {
    arg: true,
    apply: (o, v, f) => {
      const l = v.toLowerCase();
      o.logVerbose = l === 'true' ? 1 : l === 'false' ? 0 : int(v, f);
    },
    help: 'verbose log level, 0 = off',
  },
  'log-info': { arg: 'bool', apply: (o, v, f) => (o.logInfo = bool(v, f)), help: '(default true)' },
  'log-warning': { arg: 'bool', apply: (o, v, f) => (o.logWarning = bool(v, f)), help: '(default true)' },
  'log-error': { arg: 'bool', apply: (o, v, f) => (o.logError = bool(v, f)), help: '(default true)' },
  'log-format': {
    arg: true,
    apply: (o, v, f) => {
      if (v !== 'default' && v !== 'ISO8601' && v !== 'json') throw new UsageError(`Bad option: "--${f}".\ninvalid argument for --log-format, got: ${v}`);
      o.logFormat = v;
    },
    help: 'default | ISO8601 | json (one JSON object per line)',
  },
  'log-file': { arg: true, apply: (o, v) => (o.logFile = v), help: 'write the log to this file' },
  'log-dir': { arg: true, apply: (o, v) => (o.logDir = v), help: "the logging extension may set 'log_file' to a file under this directory" },
  'access-log': { arg: 'bool', apply: (o, v, f) => (o.accessLog = bool(v, f)), help: 'one log line per HTTP / gRPC request (default false)' },
  'trace-config': {
    arg: true,
    apply: (o, v, f) => traceConfig(o, v, f),
    help: '<setting>=<value> or <mode>,<setting>=<value> (repeatable): rate, level, count, mode, triton,file, triton,log-frequency, opentelemetry,url ...',
  },
  'trace-dir': { arg: true, apply: (o, v) => (o.trace.dir = v), help: "the trace extension may set 'trace_file' to a file under this directory" },
  'trace-file': { arg: true, apply: (o, v, f) => traceConfig(o, `triton,file=${v}`, f), help: 'deprecated: --trace-config triton,file=' },
  'trace-level': { arg: true, apply: (o, v, f) => traceConfig(o, `level=${v}`, f), help: 'deprecated: --trace-config level=' },
  'trace-rate': { arg: true, apply: (o, v, f) => traceConfig(o, `rate=${v}`, f), help: 'deprecated: --trace-config rate=' },
  'trace-count': { arg: true, apply: (o, v, f) => traceConfig(o, `count=${v}`, f), help: 'deprecated: --trace-config count=' },
  'trace-log-frequency': { arg: true, apply: (o, v, f) => traceConfig(o, `triton,log-frequency=${v}`, f), help: 'deprecated: --trace-config triton,log-frequency=' },
  'backend-config': {
    arg: true,
    apply: (o, v, f) => {
      const m = /^(?:([^,=]+),)?([^=,]+)=(.*)$/.exec(v);
      if (!m) throw new UsageError(`Bad option: "--${f}".\n--backend-config option format is '<backend name>,<setting>=<value>'. Got ${v}`);
      const backend = m[1] ?? '';
      (o.backendConfig[backend] ??= {})[m[2]] = m[3];
    },
    help: '<backend>,<setting>=<value> or <setting>=<value> (repeatable)',
  },
  role: {
    arg: true,
    apply: (o, v, f) => {
      for (const r of v.split(',').map((x) => x.trim())) {
        if (r !== 'gateway' && r !== 'scheduler' && r !== 'worker') {
          throw new UsageError(`Bad option: "--${f}".\nunknown role '${r}': expected gateway, scheduler or worker (comma-separated)`);
        }
        if (!o.roles.includes(r)) o.roles.push(r);
      }
    },
    help: 'distributed mode: gateway | scheduler | worker, comma-separated (needs --redis; default: embedded)',
  },
  redis: { arg: true, apply: (o, v) => (o.redis = v), help: 'distributed mode: redis://[:password@]host:port[/db] or rediss://' },
  'python-executable': { arg: true, apply: (o, v) => (o.pythonExecutable = v), help: 'default interpreter for python models (default: python3)' },
  'http-thread-count': ignored('HTTP threads'),
  'grpc-infer-thread-count': ignored('gRPC threads'),
  'grpc-infer-allocation-pool-size': ignored('gRPC pool size'),
  'model-load-thread-count': ignored('parallel model loaders'),
  'model-load-retry-count': ignored('load retries'),
  'backend-directory': ignored('backend shared libraries'),
  'repoagent-directory': ignored('repository agents'),
  'pinned-memory-pool-byte-size': ignored('pinned memory pool'),
  'cuda-memory-pool-byte-size': ignored('CUDA memory pool'),
  'min-supported-compute-capability': ignored('GPU filter'),
  'rate-limit': ignored('rate limiter'),
};

export function usage(): string {
  const lines = ['Usage: nereid serve --model-repository=<path> [options]', '', 'Options (Triton flag names):'];
  for (const [name, spec] of Object.entries(FLAGS)) {
    const arg = spec.arg === false ? '' : spec.arg === 'bool' ? '[=<bool>]' : '=<value>';
    lines.push(`  --${name}${arg}`.padEnd(58) + spec.help);
  }
  return lines.join('\n');
}

function isBoolWord(s: string | undefined): boolean {
  return s !== undefined && ['true', 'false', 'on', 'off', '1', '0'].includes(s.toLowerCase());
}

/** Parses `serve`'s arguments; throws UsageError on unknown flags, bad values or bad combinations. */
export function parseServeArgs(argv: readonly string[]): ServeOptions {
  const o = defaultServeOptions();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) throw new UsageError(`Unexpected argument: ${arg}`);
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    const spec = FLAGS[name];
    if (!spec) throw new UsageError(`Unknown option: --${name}`);
    let value: string;
    if (eq !== -1) {
      if (spec.arg === false) throw new UsageError(`Bad option: "--${name}".\nthis option takes no value`);
      value = arg.slice(eq + 1);
    } else if (spec.arg === false) {
      value = 'true';
    } else if (spec.arg === 'bool') {
      value = isBoolWord(argv[i + 1]) ? argv[++i] : 'true';
    } else {
      if (i + 1 >= argv.length) throw new UsageError(`Bad option: "--${name}".\nmissing value`);
      value = argv[++i];
    }
    spec.apply(o, value, name);
  }
  if (o.modelRepositories.length === 0) throw new UsageError('--model-repository must be specified');
  if (o.loadModels.length > 0 && o.modelControlMode !== 'explicit') {
    throw new UsageError("Error: Use of '--load-model' requires setting '--model-control-mode=explicit' as well.");
  }
  if (o.loadModels.includes('*') && o.loadModels.length > 1) {
    throw new UsageError("Error: '--load-model=*' must be the only '--load-model' given.");
  }
  if (o.modelControlMode !== 'poll') o.repositoryPollSecs = 0;
  if (o.roles.length > 0 && !o.redis) throw new UsageError("Error: '--role' requires '--redis=redis://host:port'.");
  if (o.redis && o.roles.length === 0) throw new UsageError("Error: '--redis' is only used with '--role'.");
  return o;
}

import type { BackendRegistry } from '@nereid/backends';
import { ModelRepositoryManager, NereidCore, nativeHelpersOffLine, SystemSharedMemory, type InferenceCore, type LogSettings, type ResponseObserver } from '@nereid/core';
import type { ExecutionStats, InferenceError, InferenceResponse, ResponseSink } from '@nereid/protocol';
import { startHttpServer, startGrpcServer, TokenStore, type BodyBudget, type ConnectionBudget } from '@nereid/gateway';
import { RemoteRepositories } from '@nereid/repository';
import { SchedulerHost } from '@nereid/scheduler';
import { createInMemoryTransport, type SchedulerChannel, type WorkerChannel } from '@nereid/transport';
import { WorkerHost } from '@nereid/worker';
import { defaultServeOptions, type ServeOptions } from './cli-options';
import { ServerLogger } from './logger';
import { startPolling } from './poller';
import { tracerOf } from './trace-config';
import { loadStartupModels } from './startup';
import { metricsOf, startMetricsEndpoint, statsSourceOf } from './metrics-endpoint';
import type { NereidMetrics } from '@nereid/metrics';

/** An ensemble step's answers, from the core back to the ensemble's sink: one object per step. */
class StepObserver implements ResponseObserver {
  constructor(private readonly sink: ResponseSink) {}

  onResponse(response: InferenceResponse | undefined, final: boolean): void {
    this.sink.send(response, final);
  }

  onError(error: InferenceError): void {
    this.sink.fail(error);
  }

  onExecuted(stats: ExecutionStats): void {
    this.sink.executed?.(stats);
  }
}

export interface RunningNereid {
  httpPort: number;
  grpcPort: number;
  metricsPort: number;
  core: NereidCore;
  /** The schedulers of the loaded models (e.g. sequence slots in use). */
  scheduler: SchedulerHost;
  /** The instances this process hosts (distributed mode's worker role runs batches on it). */
  worker: WorkerHost;
  manager: ModelRepositoryManager;
  /** The metrics port's families (absent with --allow-metrics=false): distributed mode adds its own. */
  metrics?: NereidMetrics;
  /** Stops the front doors, drains in-flight requests, unloads every model. */
  close(): Promise<void>;
}

/**
 * Distributed mode's hooks (apps/nereid/src/roles.ts); embedded mode passes none. `backends`
 * replaces the shipped backends (a gateway loads neither onnxruntime nor python); `worker` and
 * `scheduler` wrap or replace the in-process channels the model manager and the core use.
 */
export interface ServeWiring {
  backends?: BackendRegistry;
  worker?: (local: WorkerHost) => WorkerChannel;
  scheduler?: (local: SchedulerHost) => SchedulerChannel;
  /** What the front doors call instead of the core (a gateway's cluster-wide control plane). */
  core?: (local: NereidCore, manager: ModelRepositoryManager) => InferenceCore;
}

/** The backends Nereid ships, configured from `--backend-config`. */
export async function defaultBackends(options: ServeOptions): Promise<BackendRegistry> {
  // Loaded here, not at the top: a gateway-only process (roles.ts) never loads onnxruntime.
  const { BackendRegistry, OnnxRuntimeBackend, PythonBackend } = await import('@nereid/backends');
  const python = new PythonBackend({ pythonExecutable: options.pythonExecutable, backendConfig: options.backendConfig.python ?? {} });
  // Where python3 is a version manager's shim, finding the real interpreter takes a while: it is
  // asked now, in parallel with the rest of the start-up.
  python.warmUp();
  return new BackendRegistry().register(new OnnxRuntimeBackend()).register(python);
}

/**
 * Embedded mode: gateway, scheduler and worker in one process, wired through the in-memory
 * transport. Resolves once the front doors listen and the start-up models are loaded.
 */
export async function startNereid(partial: Partial<ServeOptions> & { modelRepositories: string[] }, wiring: ServeWiring = {}): Promise<RunningNereid> {
  const options: ServeOptions = { ...defaultServeOptions(), ...partial };
  const logSettings: LogSettings = {
    log_file: options.logFile,
    log_info: options.logInfo,
    log_warning: options.logWarning,
    log_error: options.logError,
    log_verbose_level: options.logVerbose,
    log_format: options.logFormat,
  };
  const logger = new ServerLogger(logSettings, options.accessLog);
  // Once: which optional native helpers (native/, built by npm run build) this server runs without.
  const nativeOff = nativeHelpersOffLine();
  if (nativeOff) logger.log('info', nativeOff);
  const tracer = tracerOf(options.trace, logger.log);
  // Cloud repositories (s3://, gs://, as://) are served from local copies, synced before each scan.
  // In poll mode a poll's scan and the loads it starts share one listing; an explicit load always lists.
  const repositories = new RemoteRepositories(options.modelRepositories, {
    log: logger.log,
    reuseMs: options.modelControlMode === 'poll' ? Math.min(1000, options.repositoryPollSecs * 500) : 0,
  });
  const backends = wiring.backends ?? (await defaultBackends(options));
  // Prometheus families (prom-client), python custom metrics; none with --allow-metrics=false.
  const metrics = metricsOf(options);
  const defaultMaxBatchSize = Number(options.backendConfig['']?.['default-max-batch-size'] ?? 4);

  // The worker calls back into the core (BLS, statistics); the core exists only after the worker.
  let core!: NereidCore;
  const worker = new WorkerHost(
    backends,
    {
      infer: (request, onResponse) => core.inferAll(request, onResponse),
      // pb_utils.load_model & co.: the repository API's load and unload (explicit mode, once started).
      models: {
        load: (name, config, files) => core.loadModel(name, { config: config || undefined, files: files.size > 0 ? new Map(files) : undefined }),
        unload: (name, unloadDependents) => core.unloadModel(name, unloadDependents),
        isReady: (name, version) => core.isModelReady(name, version),
      },
      onBatch: (report) => core.onBatch(report),
    },
    logger.log,
    metrics?.custom,
  );
  // Ensembles send their steps back through the core, each to its own model's scheduler.
  const scheduler = new SchedulerHost(worker, {
    inferStep: (request, sink) => core.infer(request, new StepObserver(sink)),
    modelConfig: (name, version) => core.servedConfig(name, version),
    onBatch: (report) => core.onBatch(report),
  });
  const transport = createInMemoryTransport(wiring.scheduler?.(scheduler) ?? scheduler, wiring.worker?.(worker) ?? worker);
  const manager = new ModelRepositoryManager(
    {
      repositories: repositories.localPaths(),
      prepareRepositories: repositories.hasRemote ? () => repositories.prepare() : undefined,
      shownPaths: repositories.shownPaths(),
      autoComplete: options.autoComplete,
      modelConfigName: options.modelConfigName,
      defaultMaxBatchSize,
      gpuCount: 0,
      allowFileOverrides: options.allowModelFileOverrides,
      maxInputBytes: options.httpMaxInputSize,
      statsObserver: metrics && ((model, version, modelMetrics, decoupled) => metrics.observerFor(model, version, modelMetrics, (m) => logger.log('warn', m), decoupled)),
      log: logger.log,
    },
    backends,
    transport.scheduler,
    transport.worker,
  );
  core = new NereidCore(
    {
      serverId: options.serverId,
      controlMode: options.modelControlMode,
      strictReadiness: options.strictReadiness,
      clientSharedMemory: options.allowClientShm,
      log: logger.log,
      logSettings,
      logDir: options.logDir,
      tracer,
    },
    manager,
    transport.scheduler,
  );

  const front = wiring.core?.(core, manager) ?? core;

  // Client system shared memory, one set of regions for both front doors (--allow-client-shm).
  const sharedMemory = new SystemSharedMemory({ enabled: options.allowClientShm, maxInputBytes: options.httpMaxInputSize });
  const closers: (() => Promise<void>)[] = [];
  const close = async (): Promise<void> => {
    // Readiness turns false first; the front doors then drain together (none waits for another's
    // clients), and the models are unloaded once every in-flight request is answered.
    core.setReady(false);
    await Promise.all(closers.map((c) => c().catch(() => undefined)));
    // Every region unregistered once the front doors have answered their last request.
    sharedMemory.close();
    await manager.unloadAll();
    await scheduler.closeAll();
    await worker.close();
    // Traces still held (log frequency 0, requests cut off) are written, spans exported.
    await tracer.close();
    await logger.close();
    await repositories.close();
  };
  try {
    await loadStartupModels(manager, options, logger.log, (name) => core.loadAtStartup(name));
    let httpPort = -1;
    let grpcPort = -1;
    let metricsPort = -1;
    // One budget of request bytes held at once for both front doors (--http-max-inflight-body-bytes).
    let bodyBudget: BodyBudget | undefined;
    // And one budget of open connections (--http-max-connections).
    let connections: ConnectionBudget | undefined;
    const authTokens = options.authTokensFile ? new TokenStore(options.authTokensFile, (m) => logger.log('warn', m)) : undefined;
    if (authTokens) {
      authTokens.watch();
      closers.push(async () => authTokens.close());
    }
    if (options.allowHttp) {
      const http = await startHttpServer(front, {
        host: options.httpAddress,
        port: options.httpPort,
        maxInputSize: options.httpMaxInputSize,
        maxOutputSize: options.maxOutputSize,
        allowClientShm: options.allowClientShm,
        sharedMemory,
        restrictedApis: options.httpRestrictedApis,
        authTokens,
        requestLog: logger,
        limits: {
          requestTimeoutSecs: options.httpRequestTimeoutSecs,
          headerTimeoutSecs: options.httpHeaderTimeoutSecs,
          maxConnections: options.httpMaxConnections,
          maxInflightBodyBytes: options.httpMaxInflightBodyBytes,
        },
      });
      closers.push(() => http.close());
      httpPort = http.port;
      bodyBudget = http.bodyBudget;
      connections = http.connections;
      logger.log('info', `Started HTTPService at ${options.httpAddress}:${httpPort}`);
    }
    if (options.allowGrpc) {
      const grpc = await startGrpcServer(front, {
        host: options.grpcAddress,
        port: options.grpcPort,
        maxMessageSize: options.grpcMaxMessageSize,
        maxInputSize: options.httpMaxInputSize,
        maxOutputSize: options.maxOutputSize,
        keepalive: options.grpcKeepalive,
        maxConnectionAgeMs: options.grpcMaxConnectionAgeMs,
        maxConnectionAgeGraceMs: options.grpcMaxConnectionAgeGraceMs,
        shutdownGraceMs: options.exitTimeoutSecs * 1000,
        restrictedProtocols: options.grpcRestrictedProtocols,
        sharedMemory,
        authTokens,
        requestLog: logger,
        bodyBudget,
        maxInflightBodyBytes: options.httpMaxInflightBodyBytes,
        connections,
        maxConnections: options.httpMaxConnections,
        messageTimeoutMs: options.httpRequestTimeoutSecs * 1000,
        prefaceTimeoutMs: options.httpHeaderTimeoutSecs * 1000,
        maxConnectionIdleMs: options.grpcMaxConnectionIdleMs,
      });
      closers.push(() => grpc.close());
      grpcPort = grpc.port;
      logger.log('info', `Started GRPCInferenceService at ${options.grpcAddress}:${grpcPort}`);
    }
    if (metrics) {
      metrics.attach(statsSourceOf(manager, scheduler));
      const endpoint = await startMetricsEndpoint(metrics, options.metricsAddress ?? options.httpAddress, options.metricsPort);
      closers.push(() => endpoint.close());
      metricsPort = endpoint.port;
      logger.log('info', `Started Metrics Service at ${options.metricsAddress ?? options.httpAddress}:${metricsPort}`);
    }
    if (options.modelControlMode === 'poll' && options.repositoryPollSecs > 0) {
      const poller = startPolling(manager, options.repositoryPollSecs * 1000, logger.log);
      closers.push(async () => poller.stop());
    }
    core.setReady(true);
    return { httpPort, grpcPort, metricsPort, core, scheduler, worker, manager, metrics, close };
  } catch (e) {
    await close();
    throw e;
  }
}

import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import {
  ClusterCore, ClusterMembers, ClusterSchedulerChannel, ClusterWatch, ClusterWorkerChannel, ControlClient, ControlResponder, catchUp,
  clusterBackends, gatewayControlHandler, startHeartbeat,
} from '@nereid/gateway';
import { ClusterMetrics, type NereidMetrics } from '@nereid/metrics';
import { connectSchedulerState, SchedulerAgent } from '@nereid/scheduler';
import { CancelRegistry, connectRedisPort, Names, ResponseRouter, type MessagePort, type WorkerCapacity, type WorkerChannel } from '@nereid/transport';
import { BatchFences, WorkerAgent, WorkerControl, WORKER_BEAT_MS, instanceSpecs, type WorkerHost } from '@nereid/worker';
import type { ServeOptions } from './cli-options';
import { RedisClusterModels } from './roles-cluster';
import { metricsOf, startMetricsEndpoint } from './metrics-endpoint';
import { startHealthEndpoint } from './roles-health';
import { startNereid, type RunningNereid } from './serve';

/** How long a gateway waits at start-up for a worker of the cluster to serve each model. */
const GATEWAY_LOAD_WAIT_MS = Number(process.env.NEREID_CLUSTER_WAIT_MS ?? 60_000);
/** How long a gateway waits for every live process's answer to a statistics or index question. */
const QUERY_TIMEOUT_MS = Number(process.env.NEREID_CLUSTER_QUERY_TIMEOUT_MS ?? 1000);

/** GPUs this process may use, from CUDA_VISIBLE_DEVICES (unset, empty or -1: none). */
function gpuCount(): number {
  const v = process.env.CUDA_VISIBLE_DEVICES?.trim();
  if (!v || v === '-1' || v.toLowerCase() === 'none' || v.toLowerCase() === 'nodevfiles') return 0;
  return v.split(',').filter((d) => d.trim() !== '').length;
}

export interface RunningRoles {
  /** The roles' front doors (gateway), or the worker's own (health, statistics, metrics). */
  server?: RunningNereid;
  gatewayId?: string;
  workerId?: string;
  schedulerId?: string;
  /** A scheduler-only process's health endpoints (HTTP port). */
  healthPort?: number;
  /** A scheduler-only process's metrics port. */
  metricsPort?: number;
  close(): Promise<void>;
}

type Log = (level: 'info' | 'warn' | 'error' | 'verbose', message: string) => void;

/** Whether a model has a READY version in this process's server. */
function loadedHere(server: RunningNereid, name: string): boolean {
  return [...(server.manager.get(name)?.versions.values() ?? [])].some((v) => v.state === 'READY');
}

/** Records what each load on the local worker offers (its capacity), for the cluster's table. */
function recordingWorker(local: WorkerHost, capacities: Map<string, WorkerCapacity>): WorkerChannel {
  return {
    autoComplete: (backend, ctx) => local.autoComplete(backend, ctx),
    load: async (spec) => {
      const capacity = await local.load(spec);
      capacities.set(spec.key, capacity);
      return capacity;
    },
    execute: (key, instance, items) => local.execute(key, instance, items),
    unload: (key) => {
      capacities.delete(key);
      return local.unload(key);
    },
  };
}

/**
 * Distributed mode (`nereid serve --role gateway|scheduler|worker --redis <url>`): the roles this
 * process runs, wired through the Redis transport. A gateway-only process loads neither
 * onnxruntime nor python: its models' configs come from the workers of the cluster.
 */
export async function startRoles(options: ServeOptions): Promise<RunningRoles> {
  const roles = new Set(options.roles);
  const id = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const log: Log = (level, message) => {
    if (level === 'verbose' && options.logVerbose === 0) return;
    if (level === 'info' && !options.logInfo) return;
    process.stderr.write(`${level[0].toUpperCase()} nereid ${message}\n`);
  };
  const port: MessagePort = await connectRedisPort({ url: options.redis!, onError: (e) => log('warn', `transport: ${(e as Error)?.message ?? e}`) });
  const cluster = await RedisClusterModels.connect(options.redis!);
  const closers: Array<() => Promise<void>> = [];
  const running: RunningRoles = {
    close: async () => {
      for (const c of closers.reverse()) await c().catch(() => undefined);
      await port.close();
      await cluster.close();
    },
  };
  // The cluster's live members (heartbeats), for the control plane and the metrics.
  const members = new ClusterMembers(port);
  await members.start();
  closers.push(() => members.stop());
  // Each metrics port of this process gets the cluster's families; one PING a beat times Redis for all.
  const clusterMetrics: ClusterMetrics[] = [];
  const follow = { liveWorkers: () => members.live('worker').length, workerLoads: () => members.live('worker').map((m) => ({ worker: m.id, load: m.load })) };
  const addClusterMetrics = (metrics: NereidMetrics | undefined, following: boolean): void => {
    if (metrics) clusterMetrics.push(new ClusterMetrics(metrics.registry, following ? follow : {}));
  };
  const pinger = setInterval(() => {
    if (clusterMetrics.length === 0) return;
    cluster.ping().then((ms) => clusterMetrics.forEach((m) => m.observeRedisRoundTrip(ms)), () => undefined);
  }, WORKER_BEAT_MS);
  pinger.unref();
  closers.push(async () => clearInterval(pinger));
  try {
    if (roles.has('worker')) {
      const capacities = new Map<string, WorkerCapacity>();
      // With a gateway in the same process, the gateway has the front doors.
      const own = roles.has('gateway') ? { allowHttp: false, allowGrpc: false, allowMetrics: false } : {};
      const server = await startNereid({ ...options, ...own }, { worker: (local) => recordingWorker(local, capacities) });
      closers.push(() => server.close());
      const cancels = new CancelRegistry(port);
      await cancels.start();
      closers.push(() => cancels.stop());
      const agent = new WorkerAgent(port, cluster, server.worker, cancels, `worker-${id}`, new BatchFences((m) => log('warn', m)));
      closers.push(() => agent.stop());
      const control = new WorkerControl(
        agent,
        server.core,
        (name, version) => {
          const rt = server.manager.get(name)?.versions.get(version)?.runtime;
          return rt && { key: rt.key, config: rt.config, capacity: capacities.get(rt.key) ?? { instances: instanceSpecs(rt.config).active.length, depth: 1 } };
        },
        (m) => void port.publish(Names.lifecycleTopic, m).catch(() => undefined),
      );
      // The versions READY already (start-up), then every transition: served to the cluster while READY here.
      for (const entry of server.manager.all()) {
        for (const v of entry.versions.values()) {
          if (v.state === 'READY' && v.runtime) control.onLifecycle({ model: entry.name, version: v.version, state: 'READY', reason: '', key: v.runtime.key });
        }
      }
      const unfollow = server.core.onLifecycle((e) => control.onLifecycle(e));
      closers.push(async () => unfollow());
      await agent.settled();
      const responder = new ControlResponder(port, agent.workerId, 'worker', (m) => control.handle(m));
      await responder.start();
      closers.push(() => responder.stop());
      const stopBeat = startHeartbeat(port, () => ({ workerId: agent.workerId, role: 'worker', models: agent.models, devices: { gpus: gpuCount() }, load: agent.load }));
      closers.push(async () => stopBeat());
      addClusterMetrics(server.metrics, false);
      if (options.modelControlMode === 'explicit') {
        // A worker that joins loads what the cluster serves (models loaded through the API before it started).
        const asker = new ControlClient(port, members, agent.workerId);
        await asker.start();
        closers.push(() => asker.stop());
        await catchUp(asker, { loadModel: (n) => server.core.loadModel(n), isLoaded: (n) => loadedHere(server, n) }, log, {
          heartbeatMs: WORKER_BEAT_MS, timeoutMs: QUERY_TIMEOUT_MS,
        });
        await agent.settled();
      }
      running.workerId = agent.workerId;
      if (!roles.has('gateway')) running.server = server;
      log('info', `worker ${agent.workerId} serving on ${options.redis}`);
    }
    if (roles.has('scheduler')) {
      const state = await connectSchedulerState(options.redis!);
      closers.push(async () => state.close());
      const agent = new SchedulerAgent(port, cluster, `scheduler-${id}`, log, state);
      await agent.start();
      closers.push(() => agent.stop());
      running.schedulerId = agent.schedulerId;
      if (!running.server && !roles.has('gateway') && options.allowHttp) {
        const health = await startHealthEndpoint(options.httpAddress, options.httpPort, () => true);
        closers.push(() => health.close());
        running.healthPort = health.port;
        log('info', `scheduler ${agent.schedulerId}: health endpoints at ${options.httpAddress}:${health.port}`);
      }
      const metrics = !running.server && !roles.has('gateway') ? metricsOf(options) : undefined;
      if (metrics) {
        // The process's own families (CPU, memory); the queues' gauges are not exported yet.
        metrics.attach({ served: () => [], pending: () => 0, inflight: () => 0, sequenceSlotsInUse: () => undefined });
        addClusterMetrics(metrics, true);
        const host = options.metricsAddress ?? options.httpAddress;
        const endpoint = await startMetricsEndpoint(metrics, host, options.metricsPort);
        closers.push(() => endpoint.close());
        running.metricsPort = endpoint.port;
      }
    }
    if (roles.has('gateway')) {
      const router = new ResponseRouter(port, `gateway-${id}`);
      await router.start();
      closers.push(() => router.stop());
      const watch = new ClusterWatch(cluster);
      await watch.start();
      closers.push(async () => watch.stop());
      const control = new ControlClient(port, members, router.gatewayId);
      await control.start();
      closers.push(() => control.stop());
      const server = await startNereid(options, {
        backends: roles.has('worker') ? undefined : clusterBackends(),
        worker: () => new ClusterWorkerChannel(cluster, GATEWAY_LOAD_WAIT_MS),
        scheduler: (local) => new ClusterSchedulerChannel(port, router, local, watch),
        core: (local, manager) =>
          new ClusterCore(local, manager, control, watch, {
            controlMode: options.modelControlMode,
            strictReadiness: options.strictReadiness,
            loadTimeoutMs: GATEWAY_LOAD_WAIT_MS,
            queryTimeoutMs: QUERY_TIMEOUT_MS,
            log,
          }),
      });
      closers.push(() => server.close());
      await watch.refresh();
      // A worker's version that changes state: readiness follows at once rather than at the next beat.
      const lifecycle = await port.subscribe(Names.lifecycleTopic, (m) => {
        if (m.kind === 'lifecycle') void watch.refresh().catch(() => undefined);
      });
      closers.push(() => lifecycle.close());
      const responder = new ControlResponder(port, router.gatewayId, 'gateway', gatewayControlHandler(server.core, watch));
      await responder.start();
      closers.push(() => responder.stop());
      const stopBeat = startHeartbeat(port, () => ({ workerId: router.gatewayId, role: 'gateway', models: [], devices: { gpus: 0 }, load: router.pending }));
      closers.push(async () => stopBeat());
      addClusterMetrics(server.metrics, true);
      if (options.modelControlMode === 'explicit') {
        await catchUp(control, { loadModel: (n) => server.core.loadModel(n), isLoaded: (n) => loadedHere(server, n) }, log, {
          heartbeatMs: WORKER_BEAT_MS, timeoutMs: QUERY_TIMEOUT_MS,
        });
      }
      running.server = server;
      running.gatewayId = router.gatewayId;
      log('info', `gateway ${router.gatewayId} on ${options.redis}`);
    }
    return running;
  } catch (e) {
    await running.close();
    throw e;
  }
}

import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { ClusterSchedulerChannel, ClusterWatch, ClusterWorkerChannel, clusterBackends } from '@nereid/gateway';
import { connectSchedulerState, SchedulerAgent } from '@nereid/scheduler';
import { CancelRegistry, connectRedisPort, ResponseRouter, type MessagePort, type WorkerCapacity, type WorkerChannel } from '@nereid/transport';
import { BatchFences, WorkerAgent, instanceSpecs, type WorkerHost } from '@nereid/worker';
import type { ServeOptions } from './cli-options';
import { RedisClusterModels } from './roles-cluster';
import { metricsOf, startMetricsEndpoint } from './metrics-endpoint';
import { startHealthEndpoint } from './roles-health';
import { startNereid, type RunningNereid } from './serve';

/** How long a gateway waits at start-up for a worker of the cluster to serve each model. */
const GATEWAY_LOAD_WAIT_MS = Number(process.env.NEREID_CLUSTER_WAIT_MS ?? 60_000);

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
      for (const entry of server.manager.all()) {
        for (const v of entry.versions.values()) {
          const rt = v.runtime;
          if (v.state !== 'READY' || !rt || rt.config.platform === 'ensemble') continue;
          const capacity = capacities.get(rt.key) ?? { instances: instanceSpecs(rt.config).active.length, depth: 1 };
          await agent.serve({ name: entry.name, version: v.version, localKey: rt.key, config: rt.config, instances: capacity.instances, depth: capacity.depth });
          closers.push(() => cluster.withdraw(entry.name, v.version, agent.workerId));
        }
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
      const server = await startNereid(options, {
        backends: roles.has('worker') ? undefined : clusterBackends(),
        worker: () => new ClusterWorkerChannel(cluster, GATEWAY_LOAD_WAIT_MS),
        scheduler: (local) => new ClusterSchedulerChannel(port, router, local, watch),
      });
      closers.push(() => server.close());
      await watch.refresh();
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

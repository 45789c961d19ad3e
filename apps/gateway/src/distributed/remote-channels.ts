import type { AutoCompleteContext } from '@nereid/backends';
import type { ModelConfig } from '@nereid/model-config';
import { InferenceError, toInferenceError, type ExecutionItem } from '@nereid/protocol';
import type {
  ExecuteBatchMessage, MessagePort, ModelKey, ResponseMessage, ResponseRouter, SchedulerChannel, WorkerCapacity,
  WorkerChannel, WorkerLoadSpec,
} from '@nereid/transport';
import {
  errorFromWire, liveEntries, requestQueueOf, requestToWire, responseFromWire, statsFromWire,
  type ClusterModelEntry, type ClusterModels,
} from '@nereid/worker';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Version of a `<name>/<version>/<generation>` key. */
function versionOf(key: ModelKey): number {
  return Number(key.split('/').at(-2));
}

/**
 * A gateway's view of the workers (distributed mode): nothing loads here. A model version is
 * "loaded" once a worker of the cluster serves it, with the config that worker loaded; the
 * gateway's own repository manager then reads the rest (labels, versions) as in embedded mode.
 */
export class ClusterWorkerChannel implements WorkerChannel {
  constructor(
    private readonly cluster: ClusterModels,
    /** How long a load waits for a worker to serve the version. */
    private readonly waitMs: number,
  ) {}

  private async served(name: string, version: number | undefined): Promise<ClusterModelEntry[]> {
    const deadline = Date.now() + this.waitMs;
    for (;;) {
      const all = liveEntries(await this.cluster.list()).filter((e) => e.name === name && (version === undefined || e.version === version));
      if (all.length > 0) return all;
      if (Date.now() > deadline) {
        throw InferenceError.unavailable(`no worker of the cluster serves model '${name}'${version === undefined ? '' : ` version ${version}`}`);
      }
      await sleep(100);
    }
  }

  async autoComplete(_backend: string, ctx: AutoCompleteContext): Promise<ModelConfig> {
    const version = Number(ctx.versionDir.split(/[\\/]/).filter(Boolean).at(-1));
    const [entry] = await this.served(ctx.config.name ?? '', Number.isInteger(version) ? version : undefined);
    return entry.config;
  }

  async load(spec: WorkerLoadSpec): Promise<WorkerCapacity> {
    const entries = await this.served(spec.config.name ?? '', spec.version);
    return { instances: entries.reduce((n, e) => n + e.instances, 0), depth: Math.min(...entries.map((e) => e.depth)) };
  }

  execute(key: ModelKey): Promise<void> {
    return Promise.reject(InferenceError.internal(`a gateway runs no model ('${key}')`));
  }

  async unload(): Promise<void> {}
}

/**
 * A gateway's view of the schedulers (distributed mode): each request becomes a message on its
 * model version's request queue (an execute-batch of one request), and its responses come back
 * through this gateway's mailbox (the ResponseRouter). A client that goes away is a cancel
 * message. Ensembles are scheduled here, by `local`: their steps go back through the core and
 * so to the cluster.
 */
export class ClusterSchedulerChannel implements SchedulerChannel {
  private readonly ensembles = new Set<ModelKey>();
  private readonly pending = new Map<ModelKey, number>();

  constructor(
    private readonly port: MessagePort,
    private readonly router: ResponseRouter,
    private readonly local: SchedulerChannel,
    /** Which versions a live worker serves (ClusterWatch); absent: not checked. */
    private readonly watch?: { serves(name: string, version: number): boolean },
  ) {}

  open(key: ModelKey, config: ModelConfig, capacity: WorkerCapacity, modelDir?: string): void {
    if (config.platform === 'ensemble') {
      this.ensembles.add(key);
      this.local.open(key, config, capacity, modelDir);
      return;
    }
    this.pending.set(key, 0);
  }

  enqueue(key: ModelKey, item: ExecutionItem): void {
    if (this.ensembles.has(key)) {
      this.local.enqueue(key, item);
      return;
    }
    const request = item.request;
    const requestId = this.router.nextRequestId();
    const version = versionOf(key);
    if (this.watch && !this.watch.serves(request.modelName, version)) {
      item.sink.fail(InferenceError.unavailable(`no live worker of the cluster serves model '${request.modelName}' version ${version}`));
      return;
    }
    const message: ExecuteBatchMessage = {
      kind: 'execute-batch',
      batchId: requestId,
      key: `${request.modelName}/${version}`,
      instance: -1,
      slot: 0,
      requests: [requestToWire(request, requestId, this.router.gatewayId)],
    };
    const done = (): void => {
      const n = this.pending.get(key);
      if (n !== undefined) this.pending.set(key, n - 1);
      request.signal?.removeEventListener('abort', onAbort);
    };
    const onAbort = (): void => {
      done();
      void this.router.cancel(requestId).catch(() => undefined);
      item.sink.fail(new InferenceError('CANCELLED', 'Request was cancelled'));
    };
    this.pending.set(key, (this.pending.get(key) ?? 0) + 1);
    this.router.register(requestId, {
      onResponse: (m: ResponseMessage) => {
        if (m.final) done();
        if (m.stats) item.sink.executed?.(statsFromWire(m.stats));
        if (m.error) item.sink.fail(errorFromWire(m));
        else item.sink.send(m.response && responseFromWire(m.response), m.final);
      },
    });
    request.signal?.addEventListener('abort', onAbort, { once: true });
    this.port.enqueue(requestQueueOf(request.modelName, version), message).catch((e: unknown) => {
      this.router.route({ kind: 'response', requestId, final: true, error: { code: toInferenceError(e).code, message: toInferenceError(e).message } });
    });
  }

  async close(key: ModelKey, options?: { drainSequences?: boolean }): Promise<void> {
    if (this.ensembles.delete(key)) return this.local.close(key, options);
    while ((this.pending.get(key) ?? 0) > 0) await sleep(20);
    this.pending.delete(key);
  }

  pendingCount(key: ModelKey): number {
    return this.ensembles.has(key) ? this.local.pendingCount(key) : (this.pending.get(key) ?? 0);
  }
}

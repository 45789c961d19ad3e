import type { AutoCompleteContext } from '@nereid/backends';
import type { ModelConfig } from '@nereid/model-config';
import { addCancelListener, InferenceError, removeCancelListener, toInferenceError, type ExecutionItem } from '@nereid/protocol';
import type {
  ExecuteBatchMessage, MessagePort, ModelKey, ResponseMessage, ResponseRouter, ResponseWaiter, SchedulerChannel, WorkerCapacity,
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

/** A model version this channel sends to: what every request for it needs, worked out once at open. */
interface Lane {
  /** `<name>/<version>`: the execute-batch's key. */
  readonly key: string;
  readonly name: string;
  readonly version: number;
  readonly queue: string;
  /** Requests sent and not finally answered. */
  pending: number;
}

/**
 * One request on its way through the cluster: the router's waiter for its responses and its
 * client's cancel listener, one object (and its one listener) per request.
 */
class RemoteRequest implements ResponseWaiter {
  constructor(
    private readonly router: ResponseRouter,
    private readonly lane: Lane,
    private readonly item: ExecutionItem,
    private readonly requestId: string,
  ) {}

  /** The client went away: the cluster stops working on it, the sink hears CANCELLED. */
  readonly onCancel = (): void => {
    this.done();
    void this.router.cancel(this.requestId).catch(() => undefined);
    this.item.sink.fail(new InferenceError('CANCELLED', 'Request was cancelled'));
  };

  onResponse(m: ResponseMessage): void {
    const sink = this.item.sink;
    if (m.final) this.done();
    if (m.stats) sink.executed?.(statsFromWire(m.stats));
    if (m.error) sink.fail(errorFromWire(m));
    else sink.send(m.response && responseFromWire(m.response), m.final);
  }

  /** The port could not take the request (Redis gone): its answer is the port's error. */
  failed(e: unknown): void {
    const error = toInferenceError(e);
    this.router.route({ kind: 'response', requestId: this.requestId, final: true, error: { code: error.code, message: error.message } });
  }

  private done(): void {
    this.lane.pending--;
    removeCancelListener(this.item.request, this.onCancel);
  }
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
  private readonly lanes = new Map<ModelKey, Lane>();

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
    this.laneOf(key, config.name ?? key.slice(0, key.indexOf('/')));
  }

  private laneOf(key: ModelKey, name: string): Lane {
    let lane = this.lanes.get(key);
    if (!lane) {
      const version = versionOf(key);
      lane = { key: `${name}/${version}`, name, version, queue: requestQueueOf(name, version), pending: 0 };
      this.lanes.set(key, lane);
    }
    return lane;
  }

  enqueue(key: ModelKey, item: ExecutionItem): void {
    if (this.ensembles.has(key)) {
      this.local.enqueue(key, item);
      return;
    }
    const request = item.request;
    const lane = this.laneOf(key, request.modelName);
    if (this.watch && !this.watch.serves(lane.name, lane.version)) {
      item.sink.fail(InferenceError.unavailable(`no live worker of the cluster serves model '${request.modelName}' version ${lane.version}`));
      return;
    }
    const requestId = this.router.nextRequestId();
    const message: ExecuteBatchMessage = {
      kind: 'execute-batch',
      batchId: requestId,
      key: lane.key,
      instance: -1,
      slot: 0,
      requests: [requestToWire(request, requestId, this.router.gatewayId)],
    };
    const remote = new RemoteRequest(this.router, lane, item, requestId);
    lane.pending++;
    this.router.register(requestId, remote);
    addCancelListener(request, remote.onCancel);
    this.port.enqueue(lane.queue, message).catch((e: unknown) => remote.failed(e));
  }

  async close(key: ModelKey, options?: { drainSequences?: boolean }): Promise<void> {
    if (this.ensembles.delete(key)) return this.local.close(key, options);
    const lane = this.lanes.get(key);
    while (lane && lane.pending > 0) await sleep(20);
    this.lanes.delete(key);
  }

  pendingCount(key: ModelKey): number {
    return this.ensembles.has(key) ? this.local.pendingCount(key) : (this.lanes.get(key)?.pending ?? 0);
  }
}

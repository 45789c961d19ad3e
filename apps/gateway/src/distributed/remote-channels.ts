import type { AutoCompleteContext } from '@nereid/backends';
import type { ModelConfig } from '@nereid/model-config';
import { byteSizeOf } from '@nereid/tensor';
import { addCancelListener, InferenceError, removeCancelListener, toInferenceError, type ExecutionItem } from '@nereid/protocol';
import {
  MAX_REQUESTS_PER_MESSAGE,
  type ExecuteBatchMessage, type MessagePort, type ModelKey, type ResponseMessage, type ResponseRouter, type ResponseWaiter,
  type SchedulerChannel, type WireRequest, type WorkerCapacity, type WorkerChannel, type WorkerLoadSpec,
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
 * Tensor bytes one request-queue message carries at most when it holds several requests; a request
 * with more goes alone, at once. The saving is per message, which large tensors do not notice,
 * and a turn of them in one message would be one entry of the sum of their sizes (Redis takes at
 * most 512 MiB per field).
 */
const SHARED_MESSAGE_BYTES = 64 * 1024;

/** A model version this channel sends to: what every request for it needs, worked out once at open. */
interface Lane {
  /** `<name>/<version>`: the execute-batch's key. */
  readonly key: string;
  readonly name: string;
  readonly version: number;
  readonly queue: string;
  /**
   * Whether a turn's requests share one message. Not for a model with sequence batching: a
   * scheduler that dies redelivers a message whole, and a sequence's request that had already
   * run would run twice.
   */
  readonly shares: boolean;
  /** Requests sent and not finally answered. */
  pending: number;
  /** This turn's requests, sent as one message at its end (`shares`), and their tensor bytes. */
  outgoing: RemoteRequest[];
  outgoingBytes: number;
}

/**
 * One request on its way through the cluster: the router's waiter for its responses and its
 * client's cancel listener, one object (and its one listener) per request.
 */
class RemoteRequest implements ResponseWaiter {
  /** Answered, failed or cancelled. */
  private settled = false;

  constructor(
    private readonly router: ResponseRouter,
    private readonly lane: Lane,
    private readonly item: ExecutionItem,
    readonly requestId: string,
    /** The request as the message carries it. */
    readonly wire: WireRequest,
  ) {}

  /** Still waiting for its answer (a request cancelled before its turn's message left is not sent). */
  get waiting(): boolean {
    return !this.settled;
  }

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
    this.settled = true;
    this.lane.pending--;
    removeCancelListener(this.item.request, this.onCancel);
  }
}

/**
 * A gateway's view of the schedulers (distributed mode): the requests of one event-loop turn for a
 * model version become one message on its request queue (an execute-batch of those requests; the
 * scheduler takes each request on its own and acks the message once all are done), and their
 * responses come back through this gateway's mailbox (the ResponseRouter). One message per turn,
 * not per request: one encode, one Redis entry and one ack instead of one each per request
 * (bench/RESULTS.md, "bench/distributed"). A client that goes away is a cancel message.
 * Ensembles are scheduled here, by `local`: their steps go back through the core and so to the
 * cluster.
 */
export class ClusterSchedulerChannel implements SchedulerChannel {
  private readonly ensembles = new Set<ModelKey>();
  private readonly lanes = new Map<ModelKey, Lane>();
  /** Lanes with requests waiting for the turn's end. */
  private sending: Lane[] = [];

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
    this.laneOf(key, config.name ?? key.slice(0, key.indexOf('/')), config);
  }

  private laneOf(key: ModelKey, name: string, config?: ModelConfig): Lane {
    let lane = this.lanes.get(key);
    if (!lane) {
      const version = versionOf(key);
      lane = {
        key: `${name}/${version}`, name, version, queue: requestQueueOf(name, version), shares: config !== undefined && !config.sequence_batching,
        pending: 0, outgoing: [], outgoingBytes: 0,
      };
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
    const remote = new RemoteRequest(this.router, lane, item, requestId, requestToWire(request, requestId, this.router.gatewayId));
    lane.pending++;
    this.router.register(requestId, remote);
    addCancelListener(request, remote.onCancel);
    if (!lane.shares) {
      this.send(lane, [remote]);
      return;
    }
    let bytes = 0;
    for (const t of request.inputs) bytes += byteSizeOf(t);
    if (bytes > SHARED_MESSAGE_BYTES) {
      this.send(lane, [remote]);
      return;
    }
    if (lane.outgoingBytes + bytes > SHARED_MESSAGE_BYTES || lane.outgoing.length >= MAX_REQUESTS_PER_MESSAGE) this.sendOutgoing(lane);
    lane.outgoingBytes += bytes;
    if (lane.outgoing.push(remote) > 1) return;
    // After the turn's I/O callbacks: every request this turn reads goes in the lane's one message.
    if (this.sending.push(lane) === 1) setImmediate(() => this.endOfTurn());
  }

  private endOfTurn(): void {
    const lanes = this.sending;
    this.sending = [];
    for (const lane of lanes) this.sendOutgoing(lane);
  }

  /** Sends the lane's waiting requests (those not cancelled meanwhile) as one message. */
  private sendOutgoing(lane: Lane): void {
    const remotes = lane.outgoing.filter((r) => r.waiting);
    lane.outgoing = [];
    lane.outgoingBytes = 0;
    if (remotes.length > 0) this.send(lane, remotes);
  }

  private send(lane: Lane, remotes: RemoteRequest[]): void {
    const message: ExecuteBatchMessage = {
      kind: 'execute-batch',
      batchId: remotes[0].requestId,
      key: lane.key,
      instance: -1,
      slot: 0,
      requests: remotes.map((r) => r.wire),
    };
    this.port.enqueue(lane.queue, message).catch((e: unknown) => {
      for (const r of remotes) if (r.waiting) r.failed(e);
    });
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

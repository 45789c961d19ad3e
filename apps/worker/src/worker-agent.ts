import type { ExecutionItem, ExecutionStats, InferenceError, InferenceResponse, ResponseSink } from '@nereid/protocol';
import {
  Names, type CancelRegistry, type Delivery, type MessagePort, type ResponseMessage, type Subscription, type WireRequest,
} from '@nereid/transport';
import { BatchFences } from './batch-fences';
import { schedulerMailboxOf, workQueueOf, WORKER_BEAT_MS, type ClusterModelEntry, type ClusterModels } from './cluster-models';
import { requestFromWire, responseToWire, statsToWire } from './wire-requests';
import type { WorkerHost } from './worker-host';

/** A served model version: the local runtime that runs its batches. */
export interface AgentModel {
  name: string;
  version: number;
  /** The local WorkerHost's key of the version. */
  localKey: string;
  config: import('@nereid/model-config').ModelConfig;
  instances: number;
  depth: number;
}

/**
 * One request of a batch on this worker: its responses go to the gateway holding its client, or
 * to the batch's `answerTo` mailbox (a scheduler keeping implicit state).
 */
class WireSink implements ResponseSink {
  private stats?: ExecutionStats;
  private sentStats = false;

  constructor(
    private readonly wire: WireRequest,
    private readonly port: MessagePort,
    private readonly cancels: CancelRegistry,
    private readonly answerTo: string | undefined,
  ) {}

  private post(message: ResponseMessage): void {
    if (this.stats !== undefined && !this.sentStats) {
      message.stats = statsToWire(this.stats);
      this.sentStats = true;
    }
    if (message.final) this.cancels.release(this.wire.requestId);
    void this.port.send(this.answerTo ?? Names.gatewayMailbox(this.wire.replyTo), message).catch(() => undefined);
  }

  send(response: InferenceResponse | undefined, final: boolean): void {
    if (this.wire.flags.padding || !this.wire.replyTo) return;
    this.post({ kind: 'response', requestId: this.wire.requestId, final, response: response && responseToWire(response) });
  }

  fail(error: InferenceError): void {
    if (this.wire.flags.padding || !this.wire.replyTo) return;
    this.post({ kind: 'response', requestId: this.wire.requestId, final: true, error: { code: error.code, message: error.message } });
  }

  executed(stats: ExecutionStats): void {
    this.stats ??= stats;
  }
}

/**
 * The worker role (distributed mode): publishes each model version it serves to the cluster,
 * consumes its work queues (execute-batch from the schedulers), runs each batch on the local
 * WorkerHost, answers each request to its gateway's mailbox and tells the scheduler the batch is
 * done. Cancels from any gateway reach the running requests through `cancels`.
 */
export class WorkerAgent {
  private readonly subscriptions: Subscription[] = [];
  private readonly served: ClusterModelEntry[] = [];
  private beat?: NodeJS.Timeout;
  /** Per `<local key>#<instance>`: the end of the batches handed to that instance (run one after another, at most `depth` at once). */
  private readonly lanes = new Map<string, { tail: Promise<void>; running: number }>();

  constructor(
    private readonly port: MessagePort,
    private readonly cluster: ClusterModels,
    private readonly host: WorkerHost,
    private readonly cancels: CancelRegistry,
    readonly workerId: string,
    private readonly fences = new BatchFences(),
  ) {}

  async serve(model: AgentModel): Promise<void> {
    const queue = workQueueOf(this.workerId, model.name, model.version);
    this.subscriptions.push(
      // Schedulers keep several batches per instance in flight (CLUSTER_PIPELINE_DEPTH): they wait here, in order.
      await this.port.consume(queue, (d) => this.run(model, d), { consumer: this.workerId, prefetch: Math.max(64, model.instances * 16) }),
    );
    const entry: ClusterModelEntry = {
      name: model.name, version: model.version, workerId: this.workerId, config: model.config, instances: model.instances, depth: model.depth, at: Date.now(),
    };
    await this.cluster.publish(entry);
    this.served.push(entry);
    // The heartbeat: entries not re-published within WORKER_LOST_MS are taken for a worker that is gone.
    this.beat ??= setInterval(() => {
      for (const e of this.served) void this.cluster.publish({ ...e, at: Date.now() }).catch(() => undefined);
    }, WORKER_BEAT_MS);
  }

  private run(model: AgentModel, delivery: Delivery): void {
    const m = delivery.message;
    // A batch from a scheduler that lost the version's lease is not run (the new holder runs its requests).
    if (m.kind !== 'execute-batch' || !this.fences.admit(m)) {
      void delivery.ack();
      return;
    }
    const items: ExecutionItem[] = m.requests.map((wire) => ({
      request: requestFromWire(wire, wire.requestId ? this.cancels.track(wire.requestId) : undefined),
      sink: new WireSink(wire, this.port, this.cancels, m.answerTo),
      enqueuedAt: performance.now(),
    }));
    const scheduler = m.batchId.slice(0, m.batchId.lastIndexOf(':'));
    const id = `${model.localKey}#${m.instance}`;
    let lane = this.lanes.get(id);
    if (!lane) this.lanes.set(id, (lane = { tail: Promise.resolve(), running: 0 }));
    const l = lane;
    const depth = Math.max(1, model.depth);
    // Up to `depth` batches run on the instance at once (its own concurrency); the rest wait their turn.
    const run = l.running < depth ? Promise.resolve() : l.tail;
    l.running++;
    const done = run.then(() => this.host.execute(model.localKey, m.instance, items)).finally(() => l.running--);
    l.tail = done.catch(() => undefined);
    void done.finally(() => {
      void this.port
        .send(schedulerMailboxOf(scheduler), {
          kind: 'batch-done', batchId: m.batchId, key: m.key, workerId: this.workerId,
          batchSize: items.length, requestCount: items.length, compute: { inputNs: 0, inferNs: 0, outputNs: 0 },
        })
        .catch(() => undefined);
      void delivery.ack().catch(() => undefined);
    });
  }

  async stop(): Promise<void> {
    clearInterval(this.beat);
    await Promise.allSettled(this.subscriptions.map((s) => this.cluster && s.close()));
  }
}

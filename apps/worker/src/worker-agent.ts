import type { ExecutionItem, ExecutionStats, InferenceError, InferenceResponse, ResponseSink } from '@nereid/protocol';
import {
  deliveryShares, Names, type BatchDoneMessage, type CancelRegistry, type Delivery, type ExecuteBatchMessage, type MessagePort, type ResponseMessage, type Subscription, type WireRequest,
} from '@nereid/transport';
import { BatchFences } from './batch-fences';
import { BatchReports } from './batch-reports';
import { InstanceLane } from './instance-lane';
import { requestQueueOf, workQueueOf, WORK_QUEUE_EXPIRE_MS, WORKER_BEAT_MS, type ClusterModelEntry, type ClusterModels } from './cluster-models';
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
  /** Per version (`<name>/<version>`): what serves it here, its table entry and its work queue's subscription. */
  private readonly served = new Map<string, { model: AgentModel; entry: ClusterModelEntry; subscription: Subscription }>();
  private beat?: NodeJS.Timeout;
  /** Per `<local key>#<instance>`: the batches handed to that instance (at most `depth` run at once, the rest wait in order). */
  private readonly lanes = new Map<string, InstanceLane>();
  /** Serves and withdrawals, one after another (the lifecycle events that start them arrive in order). */
  private changes: Promise<void> = Promise.resolve();
  private readonly reports: BatchReports;

  constructor(
    private readonly port: MessagePort,
    private readonly cluster: ClusterModels,
    private readonly host: WorkerHost,
    private readonly cancels: CancelRegistry,
    readonly workerId: string,
    private readonly fences = new BatchFences(),
  ) {
    this.reports = new BatchReports(port);
  }

  /**
   * Serves a version to the cluster: consumes its work queue and publishes it in the table. A
   * version served already (a reload made a new runtime of it) goes on with the new runtime.
   */
  serve(model: AgentModel): Promise<void> {
    return this.change(() => this.doServe(model));
  }

  /**
   * Stops serving a version (it is being unloaded here): its table entry goes (schedulers stop
   * sending it batches), its work queue is no longer read, and this waits for the batches it
   * runs. `localKey`: only when that runtime is the one serving (a reload's old runtime is not).
   */
  withdraw(name: string, version: number, localKey?: string): Promise<void> {
    return this.change(() => this.doWithdraw(name, version, localKey));
  }

  /** Resolves once every serve and withdrawal asked for so far is done. */
  settled(): Promise<void> {
    return this.change(async () => undefined);
  }

  private change(f: () => Promise<void>): Promise<void> {
    const done = this.changes.then(f);
    this.changes = done.catch(() => undefined);
    return done;
  }

  private async doServe(model: AgentModel): Promise<void> {
    const id = `${model.name}/${model.version}`;
    const entry: ClusterModelEntry = {
      name: model.name, version: model.version, workerId: this.workerId, config: model.config, instances: model.instances, depth: model.depth, at: Date.now(),
    };
    const current = this.served.get(id);
    if (current) {
      current.model = model;
      current.entry = entry;
    } else {
      const queue = workQueueOf(this.workerId, model.name, model.version);
      // Schedulers keep up to 64 batches per instance in flight (CLUSTER_PIPELINE_DEPTH): they wait here, in order.
      // The queue is this worker's alone: it lapses a minute after the worker is gone (the schedulers
      // hand what it held to live workers), instead of staying in Redis forever.
      const subscription = await this.port.consume(queue, (d) => this.run(id, d), {
        consumer: this.workerId, prefetch: Math.max(64, model.instances * 64), expireIdleMs: WORK_QUEUE_EXPIRE_MS,
      });
      this.served.set(id, { model, entry, subscription });
    }
    await this.cluster.publish(entry);
    // The heartbeat: entries not re-published within WORKER_LOST_MS are taken for a worker that is gone.
    this.beat ??= setInterval(() => this.heartbeat(), WORKER_BEAT_MS);
  }

  private async doWithdraw(name: string, version: number, localKey?: string): Promise<void> {
    const id = `${name}/${version}`;
    const current = this.served.get(id);
    if (!current || (localKey !== undefined && current.model.localKey !== localKey)) return;
    this.served.delete(id);
    await this.cluster.withdraw(name, version, this.workerId).catch(() => undefined);
    await current.subscription.close().catch(() => undefined);
    const lanes = [...this.lanes].filter(([k]) => k.startsWith(`${current.model.localKey}#`)).map(([, l]) => l.drained());
    await Promise.all(lanes);
  }

  private heartbeat(): void {
    for (const s of this.served.values()) void this.cluster.publish({ ...s.entry, at: Date.now() }).catch(() => undefined);
  }

  /** Batches running or waiting on this worker's instances (the heartbeat's `load`). */
  get load(): number {
    let n = 0;
    for (const l of this.lanes.values()) n += l.load;
    return n;
  }

  /** What this worker serves, for its heartbeat message. */
  get models(): Array<{ key: string; instances: number }> {
    return [...this.served.values()].map((s) => ({ key: `${s.model.name}/${s.model.version}`, instances: s.model.instances }));
  }

  /** Runs the batches of an execute-batch message (its own and its `more`); acks it once all are done. */
  private run(version: string, delivery: Delivery): void {
    const m = delivery.message;
    const model = this.served.get(version)?.model;
    if (m.kind !== 'execute-batch' || !model) {
      void delivery.ack();
      return;
    }
    const shares = deliveryShares(delivery, 1 + (m.more?.length ?? 0));
    this.runBatch(model, m, shares[0]);
    if (m.more) for (let i = 0; i < m.more.length; i++) this.runBatch(model, m.more[i], shares[i + 1]);
  }

  /** Runs one batch; `share` (its part of the message's delivery) is acked once it has ended. */
  private runBatch(model: AgentModel, m: ExecuteBatchMessage, share: Delivery): void {
    const ended = (): void => void share.ack().catch(() => undefined);
    // A batch from a scheduler that lost the version's lease is not run (the new holder runs its requests).
    if (!this.fences.admit(m)) {
      ended();
      return;
    }
    const items: ExecutionItem[] = m.requests.map((wire) => ({
      request: requestFromWire(wire, wire.requestId ? this.cancels.track(wire.requestId) : undefined),
      sink: new WireSink(wire, this.port, this.cancels, m.answerTo),
      enqueuedAt: performance.now(),
    }));
    const id = `${model.localKey}#${m.instance}`;
    let lane = this.lanes.get(id);
    if (!lane) this.lanes.set(id, (lane = new InstanceLane(model.depth)));
    const done = lane.run(() => this.host.execute(model.localKey, m.instance, items));
    void done.finally(() => {
      const report: BatchDoneMessage = {
        kind: 'batch-done', batchId: m.batchId, key: m.key, workerId: this.workerId,
        batchSize: items.length, requestCount: items.length, compute: { inputNs: 0, inferNs: 0, outputNs: 0 },
      };
      // Behind the batch's answers where they go through the scheduler (`answerTo`: it must relay
      // them before it hears the batch is over). Otherwise to the version's request queue, which
      // the scheduler holding its lease reads anyway: one blocking read per scheduler turn, not a
      // second one on its mailbox (bench/RESULTS.md, "bench/distributed — issue 13"). A batch-done
      // of another holder's batch is ignored there.
      // The reports of a turn's batches go together (batch-reports.ts).
      if (m.answerTo !== undefined) void this.port.send(m.answerTo, report).catch(() => undefined);
      else this.reports.add(requestQueueOf(model.name, model.version), report);
      ended();
    });
  }

  /** Stops serving: every version leaves the cluster's table, and no work queue is read any more. */
  async stop(): Promise<void> {
    clearInterval(this.beat);
    await this.changes;
    const served = [...this.served.values()];
    this.served.clear();
    await Promise.allSettled(served.map(async (s) => {
      await this.cluster.withdraw(s.model.name, s.model.version, this.workerId);
      await s.subscription.close();
    }));
  }
}

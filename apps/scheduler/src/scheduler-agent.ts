import type { AutoCompleteContext } from '@nereid/backends';
import type { ModelConfig } from '@nereid/model-config';
import { InferenceError, toInferenceError, type ExecutionItem, type InferenceRequest, type InferenceResponse, type ResponseSink } from '@nereid/protocol';
import { Names, type Delivery, type ExecuteBatchMessage, type MessagePort, type ModelKey, type Subscription, type TransportMessage, type WireRequest, type WorkerCapacity, type WorkerChannel } from '@nereid/transport';
import {
  liveEntries, requestFromWire, requestToWire, schedulerMailboxOf, workQueueOf, requestQueueOf,
  type ClusterModelEntry, type ClusterModels,
} from '@nereid/worker';
import { SchedulerHost } from './scheduler-host';

/**
 * Batches handed to one worker instance at once, at least: a batch crosses Redis twice (to the
 * worker, and its batch-done back), and an instance that waited for that round trip between
 * batches would idle most of the time. The worker runs each instance's batches one after another.
 */
export const CLUSTER_PIPELINE_DEPTH = 4;

/** A batch handed to a worker and not reported done. */
interface RunningBatch {
  resolve: () => void;
  items: ExecutionItem[];
  message: ExecuteBatchMessage;
  /** The model's instance the scheduler chose (mapped onto the live workers' instances). */
  instance: number;
  workerId: string;
}

/** The live workers' instances of a version, in a stable order. */
function targetsOf(entries: ClusterModelEntry[]): Array<{ workerId: string; instance: number }> {
  return [...entries]
    .sort((a, b) => a.workerId.localeCompare(b.workerId))
    .flatMap((e) => Array.from({ length: e.instances }, (_, instance) => ({ workerId: e.workerId, instance })));
}

/** A request held by this scheduler: where its answer goes, and the queue message to ack once it ran. */
class QueuedSink implements ResponseSink {
  constructor(
    readonly wire: WireRequest,
    readonly delivery: Delivery,
    private readonly port: MessagePort,
  ) {}

  send(_response: InferenceResponse | undefined, _final: boolean): void {
    // The worker answers the gateway itself; a scheduler never holds a response.
  }

  /** Rejected or timed out in the queue, or the batch could not be handed over: the gateway is told. */
  fail(error: InferenceError): void {
    const { requestId, replyTo } = this.wire;
    void this.port
      .send(Names.gatewayMailbox(replyTo), { kind: 'response', requestId, final: true, error: { code: error.code, message: error.message } })
      .catch(() => undefined)
      .finally(() => void this.delivery.ack().catch(() => undefined));
  }
}

/**
 * The scheduler role (distributed mode): for each model version the cluster serves, consumes its
 * request queue, forms batches with the model's own scheduler (SchedulerHost: dynamic batching,
 * priorities, queue policies) and hands each batch to one instance of a worker as an
 * execute-batch message. The batch's requests are acked on the request queue once the worker
 * reports it done (batch-done), so a scheduler that dies before leaves them to another one.
 *
 * Instances: the live workers' instances, in a stable order (instance i of the model = one
 * instance of one worker, modulo their number). When more instances are live than the version's
 * scheduler was opened for (a worker joined), a new scheduler for the version takes the new
 * requests and the old one drains.
 */
export class SchedulerAgent {
  private readonly host: SchedulerHost;
  /** Per version (`<name>/<version>`): its scheduler's key now (`<name>/<version>#<n>`), for how many instances. */
  private readonly opened = new Map<string, { key: ModelKey; generation: number; instances: number; config: ModelConfig; depth: number; subscription: Subscription }>();
  private readonly targets = new Map<ModelKey, Array<{ workerId: string; instance: number }>>();
  private readonly running = new Map<string, RunningBatch>();
  private mailbox?: Subscription;
  private timer?: NodeJS.Timeout;
  private batches = 0;
  /** The queued request of each request object (the scheduler may wrap an item's sink). */
  private readonly queued = new WeakMap<InferenceRequest, QueuedSink>();

  constructor(
    private readonly port: MessagePort,
    private readonly cluster: ClusterModels,
    readonly schedulerId: string,
    private readonly log: (level: 'info' | 'warn' | 'error' | 'verbose', message: string) => void,
  ) {
    const dispatch: WorkerChannel = {
      autoComplete: (_b: string, ctx: AutoCompleteContext) => Promise.resolve(ctx.config),
      load: () => Promise.reject(InferenceError.internal('a scheduler loads no model')),
      unload: () => Promise.resolve(),
      execute: (key, instance, items) => this.execute(key, instance, items),
    };
    this.host = new SchedulerHost(dispatch);
  }

  async start(): Promise<void> {
    this.mailbox = await this.port.receive(schedulerMailboxOf(this.schedulerId), (m) => this.onMessage(m), {
      onLost: (e) => this.failRunning(e),
    });
    await this.refresh();
    this.timer = setInterval(() => void this.refresh().catch((e: unknown) => this.log('warn', `scheduler: ${(e as Error).message}`)), 500);
  }

  /** Opens a scheduler for each model version the cluster serves that has none here yet. */
  private async refresh(): Promise<void> {
    const byVersion = new Map<string, ClusterModelEntry[]>();
    for (const e of liveEntries(await this.cluster.list())) {
      const id = `${e.name}/${e.version}`;
      byVersion.set(id, [...(byVersion.get(id) ?? []), e]);
    }
    // Versions served here follow the live workers: a worker that joins takes batches, one that is
    // gone (no heartbeat) takes none, and the batches it held go to a live one (or fail UNAVAILABLE).
    for (const [id, open] of this.opened) {
      const targets = targetsOf(byVersion.get(id) ?? []);
      this.targets.set(id, targets);
      this.rescue(id);
      if (targets.length > open.instances) {
        const old = open.key;
        open.generation++;
        open.key = `${id}#${open.generation}`;
        open.instances = targets.length;
        this.host.open(open.key, open.config, { instances: targets.length, depth: open.depth });
        void this.host.close(old).catch(() => undefined);
        this.log('info', `scheduler ${this.schedulerId}: batching '${id}' for ${targets.length} instance(s)`);
      }
    }
    for (const [id, entries] of byVersion) {
      if (this.opened.has(id)) continue;
      const key = `${id}#1`;
      const targets = targetsOf(entries);
      this.targets.set(id, targets);
      const config: ModelConfig = entries[0].config;
      const depth = Math.max(CLUSTER_PIPELINE_DEPTH, Math.min(...entries.map((e) => e.depth)));
      const capacity: WorkerCapacity = { instances: targets.length, depth };
      this.host.open(key, config, capacity);
      const [name, version] = [entries[0].name, entries[0].version];
      const open = { key, generation: 1, instances: targets.length, config, depth, subscription: undefined as unknown as Subscription };
      this.opened.set(id, open);
      open.subscription = await this.port.consume(requestQueueOf(name, version), (d) => this.onRequest(open.key, d), {
        consumer: this.schedulerId,
        prefetch: 4096,
      });
      this.log('info', `scheduler ${this.schedulerId}: batching '${name}' version ${version} for ${targets.length} instance(s)`);
    }
  }

  private onRequest(key: ModelKey, delivery: Delivery): void {
    const m = delivery.message;
    if (m.kind !== 'execute-batch' || m.requests.length !== 1) {
      void delivery.ack();
      return;
    }
    const wire = m.requests[0];
    const sink = new QueuedSink(wire, delivery, this.port);
    const item: ExecutionItem = { request: requestFromWire(wire), sink, enqueuedAt: performance.now() };
    this.queued.set(item.request, sink);
    this.host.enqueue(key, item);
  }

  /** The live instance that runs the model's instance `instance`; undefined when no live worker serves the key. */
  private targetOf(key: ModelKey, instance: number): { workerId: string; instance: number } | undefined {
    const targets = this.targets.get(key) ?? [];
    return targets.length > 0 ? targets[instance % targets.length] : undefined;
  }

  private static lost(key: ModelKey): InferenceError {
    const [name, version] = key.split('/');
    return InferenceError.unavailable(`no live worker of the cluster serves model '${name}' version ${version}`);
  }

  /** Batches held by workers that are gone: handed to a live worker again (inference is idempotent), or failed. */
  private rescue(key: ModelKey): void {
    const live = new Set((this.targets.get(key) ?? []).map((t) => t.workerId));
    for (const [batchId, batch] of this.running) {
      if (batch.message.key !== key || live.has(batch.workerId)) continue;
      const target = this.targetOf(key, batch.instance);
      if (!target) {
        this.running.delete(batchId);
        for (const i of batch.items) i.sink.fail(SchedulerAgent.lost(key));
        batch.resolve();
        continue;
      }
      this.log('warn', `scheduler ${this.schedulerId}: batch ${batchId} of '${key}' handed again to ${target.workerId} (worker ${batch.workerId} is gone)`);
      this.dispatch(batchId, batch, target);
    }
  }

  private dispatch(batchId: string, batch: RunningBatch, target: { workerId: string; instance: number }): void {
    batch.workerId = target.workerId;
    batch.message = { ...batch.message, instance: target.instance };
    const [name, version] = batch.message.key.split('/');
    this.port.enqueue(workQueueOf(target.workerId, name, Number(version)), batch.message).catch((e: unknown) => {
      if (this.running.get(batchId) !== batch) return;
      this.running.delete(batchId);
      for (const i of batch.items) i.sink.fail(toInferenceError(e));
      batch.resolve();
    });
  }

  private execute(schedulerKey: ModelKey, instance: number, items: ExecutionItem[]): Promise<void> {
    const key = schedulerKey.split('#')[0];
    const target = this.targetOf(key, instance);
    if (!target) {
      for (const i of items) i.sink.fail(SchedulerAgent.lost(key));
      return Promise.resolve();
    }
    const batchId = `${this.schedulerId}:${++this.batches}`;
    const message: ExecuteBatchMessage = {
      kind: 'execute-batch',
      batchId,
      key,
      instance: target.instance,
      slot: 0,
      requests: items.map((i) => {
        const wire = this.queued.get(i.request)?.wire;
        // What the scheduler changed (a sequence's padding row, control inputs) travels; ids stay.
        return requestToWire(i.request, wire?.requestId ?? '', wire?.replyTo ?? '');
      }),
    };
    return new Promise<void>((resolve) => {
      const batch: RunningBatch = { resolve, items, message, instance, workerId: target.workerId };
      this.running.set(batchId, batch);
      this.dispatch(batchId, batch, target);
    });
  }

  private onMessage(m: TransportMessage): void {
    if (m.kind !== 'batch-done') return;
    const batch = this.running.get(m.batchId);
    if (!batch) return;
    this.running.delete(m.batchId);
    for (const i of batch.items) {
      void this.queued.get(i.request)?.delivery.ack().catch(() => undefined);
    }
    batch.resolve();
  }

  /**
   * The port lost Redis: a batch handed out before may be gone with it (a Redis that restarted
   * empty lost the worker's queue) and its batch-done with it, so no batch running now would ever
   * free its instance. Each fails (its gateway has failed the requests too: the same outage
   * reached its mailbox), and the instances take new batches.
   */
  private failRunning(error: InferenceError): void {
    const batches = [...this.running.values()];
    this.running.clear();
    for (const batch of batches) {
      for (const i of batch.items) i.sink.fail(error);
      batch.resolve();
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await Promise.allSettled([...this.opened.values()].map((o) => o.subscription.close()));
    await this.mailbox?.close();
    await this.host.closeAll();
  }
}

import type { AutoCompleteContext } from '@nereid/backends';
import type { ModelConfig } from '@nereid/model-config';
import { InferenceError, toInferenceError, type ExecutionItem, type InferenceRequest } from '@nereid/protocol';
import { DerivedRequest } from '@nereid/scheduling';
import {
  deliveryShares, MAX_REQUESTS_PER_MESSAGE,
  type BatchDoneMessage, type Delivery, type ExecuteBatchMessage, type MessagePort, type ModelKey, type Subscription, type TransportMessage,
  type WireRequest, type WorkerChannel,
} from '@nereid/transport';
import {
  errorFromWire, liveEntries, requestFromWire, requestToWire, responseFromWire, schedulerMailboxOf, workQueueOf, requestQueueOf,
  type ClusterModelEntry, type ClusterModels,
} from '@nereid/worker';
import { BatchDispatches } from './batch-dispatches';
import { Lease, LEASE_TICK_MS, LEASE_TTL_MS, type LeaseStore } from './model-lease';
import { QueuedSink } from './queued-sink';
import { SchedulerHost } from './scheduler-host';
import { SequenceAffinity } from './sequence-affinity';
import type { SequenceRegistry } from './sequence-registry';

/**
 * Batches handed to one worker instance at once, at least: a batch crosses Redis twice (to the
 * worker, and its batch-done back), and an instance that waited for that round trip between
 * batches would idle most of the time. The worker runs up to the instance's own depth of them at
 * once and the rest as those end (InstanceLane). The dynamic batcher hands a busy instance only a
 * batch that nothing queued later could join, so a deep pipeline does not shrink batches; with 4
 * (8 for `simple`, its instance's own depth), a model without batching served 64 clients 8
 * requests per round trip (bench/RESULTS.md, "bench/distributed — issue 13").
 */
export const CLUSTER_PIPELINE_DEPTH = 64;

/**
 * A request-queue message left unacked this long by its consumer is taken by the lease's new
 * holder. A dead holder's messages have been idle at least the lease's TTL less one renewal
 * period when its lease is taken over, so the new holder claims them all at its first try.
 */
export const TAKE_OVER_CLAIM_IDLE_MS = LEASE_TTL_MS - LEASE_TICK_MS - 250;

/** The most requests a lease holder reads ahead of what it has dispatched (its queues' memory bound). */
const READ_AHEAD_REQUESTS = 4096;

/** Where a scheduler keeps what outlives it: the leases, and the live sequences of each version. */
export interface SchedulerState {
  leases: LeaseStore;
  sequences: SequenceRegistry;
}

type Log = (level: 'info' | 'warn' | 'error' | 'verbose', message: string) => void;

/** A model version of the cluster: its lease, and while this scheduler holds it, the hold. */
interface ModelQueue {
  /** `<name>/<version>`. */
  id: string;
  name: string;
  version: number;
  config: ModelConfig;
  depth: number;
  lease: Lease;
  /** A sequence-batched model. */
  sequences: boolean;
  /** Its responses come through the scheduler: the model has implicit state. */
  relay: boolean;
  owned?: Ownership;
}

/** One hold of a version's lease: the queue consumed and the batcher fed while it lasts. */
interface Ownership {
  queue: ModelQueue;
  fence: number;
  /** The batcher's key now (`<name>/<version>#<n>`), opened for `instances` instances. */
  key: ModelKey;
  instances: number;
  /** Every batcher key opened under this hold (older ones drain after a worker joined). */
  keys: Set<ModelKey>;
  subscription?: Subscription;
  affinity: SequenceAffinity;
  /** The lease was lost: nothing more is dispatched, acked or answered under this hold. */
  deposed: boolean;
}

/** A batch handed to a worker and not reported done. */
interface RunningBatch {
  resolve: () => void;
  /** The rows as the batcher made them. */
  items: ExecutionItem[];
  /** Each row's queued request (undefined for a padding row). */
  sinks: Array<QueuedSink | undefined>;
  message: ExecuteBatchMessage;
  /** The model's instance the scheduler chose (mapped onto the live workers' instances). */
  instance: number;
  workerId: string;
  own: Ownership;
}

/** The live workers' instances of a version, in a stable order. */
function targetsOf(entries: ClusterModelEntry[]): Array<{ workerId: string; instance: number }> {
  return [...entries]
    .sort((a, b) => a.workerId.localeCompare(b.workerId))
    .flatMap((e) => Array.from({ length: e.instances }, (_, instance) => ({ workerId: e.workerId, instance })));
}

/** The client's request a batcher row was made from. */
const origin = (r: InferenceRequest): InferenceRequest => (r instanceof DerivedRequest ? r.client : r);

/**
 * The scheduler role (distributed mode). For each model version the cluster serves, it competes
 * for the version's lease (model-lease.ts); while it holds it, and only then, it consumes the
 * version's request queue, forms batches with the model's own scheduler (SchedulerHost: dynamic
 * batching, sequence batching, priorities, queue policies) and hands each batch to one instance of
 * a worker as an execute-batch message stamped with the lease's fence. The batch's requests are
 * acked on the request queue once the worker reports it done (batch-done, which comes through the
 * same queue), so a scheduler that dies before leaves them to the lease's next holder, which
 * claims them at once.
 *
 * A scheduler that loses a lease stops at once: nothing more is dispatched, acked or answered for
 * that version; the batches it had handed out may still run (their answers reach the gateways,
 * which keep the first answer of a request), and its batch-done messages are ignored.
 *
 * Instances: the live workers' instances, in a stable order (instance i of the model = one
 * instance of one worker, modulo their number). When more instances are live than the version's
 * batcher was opened for (a worker joined), a new batcher for the version takes the new requests
 * and the old one drains.
 */
export class SchedulerAgent {
  private readonly host: SchedulerHost;
  private readonly queues = new Map<string, ModelQueue>();
  /** Every open batcher key → the hold it belongs to. */
  private readonly owners = new Map<ModelKey, Ownership>();
  private readonly targets = new Map<string, Array<{ workerId: string; instance: number }>>();
  private readonly running = new Map<string, RunningBatch>();
  /** Requests whose responses come through this scheduler (implicit state), by request id. */
  private readonly relays = new Map<string, { row: ExecutionItem; sink: QueuedSink }>();
  private mailbox?: Subscription;
  private timer?: NodeJS.Timeout;
  private batches = 0;
  private generation = 0;
  /** The queued request of each request object taken from a queue. */
  private readonly queued = new WeakMap<InferenceRequest, QueuedSink>();
  private readonly dispatches: BatchDispatches;

  constructor(
    private readonly port: MessagePort,
    private readonly cluster: ClusterModels,
    readonly schedulerId: string,
    private readonly log: Log,
    private readonly state: SchedulerState,
  ) {
    const dispatch: WorkerChannel = {
      autoComplete: (_b: string, ctx: AutoCompleteContext) => Promise.resolve(ctx.config),
      load: () => Promise.reject(InferenceError.internal('a scheduler loads no model')),
      unload: () => Promise.resolve(),
      execute: (key, instance, items) => this.execute(key, instance, items),
    };
    this.host = new SchedulerHost(dispatch);
    this.dispatches = new BatchDispatches(port);
  }

  async start(): Promise<void> {
    this.mailbox = await this.port.receive(schedulerMailboxOf(this.schedulerId), (m) => this.onMessage(m), {
      onLost: (e) => this.failRunning(e),
    });
    await this.refresh();
    this.timer = setInterval(() => void this.refresh().catch((e: unknown) => this.log('warn', `scheduler: ${(e as Error).message}`)), 500);
  }

  /** Competes for the lease of each version the cluster serves; follows the live workers of the held ones. */
  private async refresh(): Promise<void> {
    const byVersion = new Map<string, ClusterModelEntry[]>();
    for (const e of liveEntries(await this.cluster.list())) {
      const id = `${e.name}/${e.version}`;
      byVersion.set(id, [...(byVersion.get(id) ?? []), e]);
    }
    // Versions served here follow the live workers: a worker that joins takes batches, one that is
    // gone (no heartbeat) takes none, and the batches it held go to a live one (or fail UNAVAILABLE).
    for (const [id, entries] of byVersion) this.targets.set(id, targetsOf(entries));
    for (const q of this.queues.values()) {
      if (!byVersion.has(q.id)) this.targets.set(q.id, []);
      const own = q.owned;
      if (!own) continue;
      this.rescue(q.id);
      const targets = this.targets.get(q.id) ?? [];
      if (targets.length > own.instances) {
        const old = own.key;
        own.key = `${q.id}#${++this.generation}`;
        own.keys.add(own.key);
        own.instances = targets.length;
        this.owners.set(own.key, own);
        this.host.open(own.key, q.config, { instances: targets.length, depth: q.depth });
        // The old batcher drains; a sequence batcher also keeps its live sequences' requests until each ends.
        void this.host
          .close(old, { drainSequences: true })
          .catch(() => undefined)
          .finally(() => {
            own.keys.delete(old);
            this.owners.delete(old);
          });
        this.log('info', `scheduler ${this.schedulerId}: batching '${q.id}' for ${targets.length} instance(s)`);
      }
      if (q.sequences) own.affinity.prune((sequenceId) => [...own.keys].some((k) => this.host.hasSequence(k, sequenceId)));
    }
    for (const [id, entries] of byVersion) {
      if (this.queues.has(id)) continue;
      const config: ModelConfig = entries[0].config;
      const q: ModelQueue = {
        id,
        name: entries[0].name,
        version: entries[0].version,
        config,
        depth: Math.max(CLUSTER_PIPELINE_DEPTH, Math.min(...entries.map((e) => e.depth))),
        sequences: config.sequence_batching !== undefined,
        relay: (config.sequence_batching?.state?.length ?? 0) > 0,
        lease: undefined as unknown as Lease,
      };
      q.lease = new Lease(this.state.leases, id, this.schedulerId, {
        acquired: (fence) => void this.hold(q, fence),
        lost: (reason) => q.owned && this.depose(q.owned, reason),
        fenced: (fence) => {
          if (q.owned) q.owned.fence = fence;
        },
      });
      this.queues.set(id, q);
      await q.lease.start();
    }
  }

  /** The lease of `q` was taken, with `fence`: opens its batcher and consumes its queue. */
  private async hold(q: ModelQueue, fence: number): Promise<void> {
    const targets = this.targets.get(q.id) ?? [];
    const key = `${q.id}#${++this.generation}`;
    const stateOnWorker = !q.relay;
    const own: Ownership = {
      queue: q, fence, key, instances: targets.length, keys: new Set([key]), deposed: false,
      affinity: new SequenceAffinity(q.id, stateOnWorker, this.state.sequences, this.schedulerId, (m) => this.log('warn', m)),
    };
    q.owned = own;
    this.owners.set(key, own);
    this.host.open(key, q.config, { instances: targets.length, depth: q.depth });
    try {
      // The sequences the previous holders left lost their state: known before any request is taken.
      const lost = q.sequences ? await own.affinity.takeOver() : 0;
      const subscription = await this.port.consume(requestQueueOf(q.name, q.version), (d) => this.onRequest(own, d), {
        consumer: this.schedulerId,
        // Messages read ahead: each holds up to MAX_REQUESTS_PER_MESSAGE requests (a gateway's
        // turn), so at most READ_AHEAD_REQUESTS requests wait in this scheduler's memory.
        prefetch: Math.ceil(READ_AHEAD_REQUESTS / MAX_REQUESTS_PER_MESSAGE),
        claimIdleMs: TAKE_OVER_CLAIM_IDLE_MS,
      });
      if (own.deposed) {
        await subscription.close();
        return;
      }
      own.subscription = subscription;
      this.log(
        'info',
        `scheduler ${this.schedulerId}: holds the lease of '${q.name}' version ${q.version} (fence ${fence}): batching for ${targets.length} instance(s)` +
          (lost > 0 ? `; ${lost} sequence(s) of the previous holder lost their state` : ''),
      );
    } catch (e) {
      this.depose(own, `could not start as its holder: ${(e as Error).message}`);
      await q.lease.abandon();
    }
  }

  /** The hold ended (lease lost, or this scheduler stops): nothing more is dispatched, acked or answered under it. */
  private depose(own: Ownership, reason: string): void {
    if (own.deposed) return;
    own.deposed = true;
    const q = own.queue;
    if (q.owned === own) q.owned = undefined;
    void own.subscription?.close().catch(() => undefined);
    for (const [batchId, batch] of this.running) if (batch.own === own) this.finish(batchId, batch);
    for (const key of own.keys) {
      void this.host
        .close(key)
        .catch(() => undefined)
        .finally(() => this.owners.delete(key));
    }
    this.log('warn', `scheduler ${this.schedulerId}: no longer holds the lease of '${q.name}' version ${q.version} (${reason}): stopped batching it`);
  }

  private onRequest(own: Ownership, delivery: Delivery): void {
    // Taken after the lease was lost: left unacked, for the next holder.
    if (own.deposed) return;
    const m = delivery.message;
    if (m.kind === 'batch-done') {
      void delivery.ack().catch(() => undefined);
      this.batchDone(m);
      return;
    }
    if (m.kind !== 'execute-batch' || m.requests.length === 0) {
      void delivery.ack();
      return;
    }
    // A gateway's requests of one turn may share a message: acked once each of them is.
    const shares = deliveryShares(delivery, m.requests.length);
    for (let i = 0; i < m.requests.length; i++) this.take(own, m.requests[i], shares[i]);
  }

  /** A request taken from the version's queue: to the batcher, unless its sequence lost its state. */
  private take(own: Ownership, wire: WireRequest, delivery: Delivery): void {
    const sink = new QueuedSink(wire, delivery, this.port, own);
    const item: ExecutionItem = { request: requestFromWire(wire), sink, enqueuedAt: performance.now() };
    this.queued.set(item.request, sink);
    const lost = own.queue.sequences ? own.affinity.check(item.request) : undefined;
    if (lost) {
      sink.fail(lost);
      return;
    }
    this.host.enqueue(own.key, item);
  }

  /** The live instance that runs the model's instance `instance`; undefined when no live worker serves the version. */
  private targetOf(id: string, instance: number): { workerId: string; instance: number } | undefined {
    const targets = this.targets.get(id) ?? [];
    return targets.length > 0 ? targets[instance % targets.length] : undefined;
  }

  private static lost(id: string): InferenceError {
    const [name, version] = id.split('/');
    return InferenceError.unavailable(`no live worker of the cluster serves model '${name}' version ${version}`);
  }

  /** Batches held by workers that are gone: handed to a live worker again (inference is idempotent), or failed. */
  private rescue(id: string): void {
    const live = new Set((this.targets.get(id) ?? []).map((t) => t.workerId));
    for (const [batchId, batch] of this.running) {
      if (batch.message.key !== id || live.has(batch.workerId)) continue;
      const target = this.targetOf(id, batch.instance);
      if (!target) {
        for (const i of batch.items) i.sink.fail(SchedulerAgent.lost(id));
        this.finish(batchId, batch);
        continue;
      }
      this.log('warn', `scheduler ${this.schedulerId}: batch ${batchId} of '${id}' handed again to ${target.workerId} (worker ${batch.workerId} is gone)`);
      const requests = batch.message.requests.slice();
      if (batch.own.queue.sequences) batch.own.affinity.route(batch.items, requests, target.workerId);
      batch.message = { ...batch.message, requests, fence: batch.own.fence };
      this.dispatch(batchId, batch, target);
    }
  }

  private dispatch(batchId: string, batch: RunningBatch, target: { workerId: string; instance: number }): void {
    batch.workerId = target.workerId;
    // A new message when the instance changes (one handed to the port before is not changed under it).
    if (batch.message.instance !== target.instance) batch.message = { ...batch.message, instance: target.instance };
    const q = batch.own.queue;
    // With the tick's other batches for that worker (batch-dispatches.ts).
    this.dispatches.add(workQueueOf(target.workerId, q.name, q.version), batch.message, (e: unknown) => {
      if (this.running.get(batchId) !== batch) return;
      for (const i of batch.items) i.sink.fail(toInferenceError(e));
      this.finish(batchId, batch);
    });
  }

  private execute(schedulerKey: ModelKey, instance: number, items: ExecutionItem[]): Promise<void> {
    const own = this.owners.get(schedulerKey);
    // No longer the holder: nothing is dispatched (the next holder runs these requests).
    if (!own || own.deposed) return Promise.resolve();
    if (own.queue.lease.heldFence === undefined) {
      this.depose(own, 'not renewed in time');
      return Promise.resolve();
    }
    const q = own.queue;
    const target = this.targetOf(q.id, instance);
    if (!target) {
      for (const i of items) i.sink.fail(SchedulerAgent.lost(q.id));
      return Promise.resolve();
    }
    const batchId = `${this.schedulerId}:${++this.batches}`;
    const sinks = items.map((i) => this.queued.get(origin(i.request)));
    // What the batcher changed (a sequence's padding row, control and state inputs) travels; ids stay.
    const requests: WireRequest[] = items.map((i, n) => requestToWire(i.request, sinks[n]?.wire.requestId ?? '', sinks[n]?.wire.replyTo ?? ''));
    if (q.sequences) own.affinity.route(items, requests, target.workerId);
    const message: ExecuteBatchMessage = {
      kind: 'execute-batch', batchId, key: q.id, instance: target.instance, slot: 0, requests, fence: own.fence,
      ...(q.relay ? { answerTo: schedulerMailboxOf(this.schedulerId) } : {}),
    };
    return new Promise<void>((resolve) => {
      const batch: RunningBatch = { resolve, items, sinks, message, instance, workerId: target.workerId, own };
      this.running.set(batchId, batch);
      if (q.relay) sinks.forEach((s, n) => s && !s.done && this.relays.set(s.wire.requestId, { row: items[n], sink: s }));
      this.dispatch(batchId, batch, target);
    });
  }

  /**
   * A batch is over (done, failed, or its hold ended). A sequence batcher learns that each row's
   * request is complete (its sink's final call: the worker answered the gateway itself), which
   * frees the sequence's slot for its next request.
   */
  private finish(batchId: string, batch: RunningBatch): void {
    this.running.delete(batchId);
    for (const s of batch.sinks) if (s) this.relays.delete(s.wire.requestId);
    if (batch.own.queue.sequences) for (const row of batch.items) row.sink.send(undefined, true);
    batch.resolve();
  }

  /**
   * A worker ran a batch (its report comes through the version's request queue, or, behind the
   * batch's relayed answers, through this scheduler's mailbox): the batch's requests are acked.
   */
  private batchDone(m: BatchDoneMessage): void {
    this.batchEnded(m.batchId);
    // The other batches the worker ended in the same turn (one message for them all).
    if (Array.isArray(m.more)) for (const r of m.more) this.batchEnded(r.batchId);
  }

  private batchEnded(batchId: string): void {
    // Unknown: another holder's batch, one from before this scheduler lost the lease, or a duplicate: ignored.
    const batch = this.running.get(batchId);
    if (!batch) return;
    this.finish(batchId, batch);
    for (const s of batch.sinks) void s?.delivery.ack().catch(() => undefined);
  }

  private onMessage(m: TransportMessage): void {
    // The batches whose answers come through this scheduler report their end here, behind them.
    if (m.kind === 'batch-done') this.batchDone(m);
    else if (m.kind === 'response') {
      // A worker's response to a request of a model with implicit state: the batcher keeps the state, the gateway gets the rest.
      const relay = this.relays.get(m.requestId);
      if (!relay) return;
      if (m.final) this.relays.delete(m.requestId);
      relay.sink.relay(m.stats, () => {
        if (m.error) relay.row.sink.fail(errorFromWire(m));
        else relay.row.sink.send(m.response && responseFromWire(m.response), m.final);
      });
    }
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

  /**
   * Stops: every hold ends at once and its lease is given up, so that another scheduler takes the
   * versions over without waiting for the leases to expire (it claims the requests left unacked).
   */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    for (const q of this.queues.values()) if (q.owned) this.depose(q.owned, 'the scheduler stops');
    await Promise.allSettled([...this.queues.values()].map((q) => q.lease.stop()));
    await this.mailbox?.close();
    await this.host.closeAll();
  }
}

import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import Redis from 'ioredis';
import { BackendRegistry, OnnxRuntimeBackend } from '@nereid/backends';
import { parseModelConfig, type ModelConfig } from '@nereid/model-config';
import {
  CancelRegistry, InMemoryBroker, InMemoryPort, ResponseRouter,
  type ExecuteBatchMessage, type MessagePort, type ResponseMessage, type TransportMessage, type WireRequest,
} from '@nereid/transport';
import { MemoryClusterModels, requestQueueOf, workQueueOf, WorkerAgent, WorkerHost } from '@nereid/worker';
import { until } from '../../../test/helpers/poll';
import { recordingPort } from '../../../test/helpers/recording-port';
import { startRedis, type RedisServer } from '../../../test/helpers/redis-server';
import { RedisLeaseStore } from './redis-leases';
import { SchedulerAgent } from './scheduler-agent';
import { RedisSequenceRegistry } from './sequence-registry';


/** A port that records the execute-batch messages it enqueues (what a scheduler dispatched). */
function recording(port: MessagePort, sent: ExecuteBatchMessage[]): MessagePort {
  return new Proxy(port, {
    get(target, prop, receiver) {
      if (prop === 'enqueue') {
        return (queue: string, m: TransportMessage) => {
          if (m.kind === 'execute-batch' && queue.startsWith('work:')) sent.push(m);
          return target.enqueue(queue, m);
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

let redis: RedisServer;
let kv: Redis;

beforeAll(async () => {
  redis = await startRedis();
  kv = new Redis(redis.url);
});
afterAll(async () => {
  kv?.disconnect();
  if (redis && !redis.external) await redis.stop();
});

const ROOT = path.resolve(__dirname, '../../..');

/** A worker role in this process: a real WorkerHost (onnxruntime) serving one model over the in-memory port. */
async function startWorker(
  broker: InMemoryBroker,
  cluster: MemoryClusterModels,
  workerId: string,
  model: string,
  change: (config: ModelConfig) => ModelConfig = (c) => c,
): Promise<{ config: ModelConfig; stop: () => Promise<void> }> {
  const dir = path.join(ROOT, 'models', model);
  const port = new InMemoryPort(broker);
  const host = new WorkerHost(
    new BackendRegistry().register(new OnnxRuntimeBackend()),
    { infer: () => Promise.reject(new Error('no BLS here')), onBatch: () => undefined },
    () => undefined,
  );
  const file = path.join(dir, 'config.pbtxt');
  const config = change({ ...parseModelConfig(readFileSync(file, 'utf8'), file), backend: 'onnxruntime', instance_group: [{ kind: 'KIND_CPU', count: 1 }] });
  const key = `${model}:1`;
  await host.load({ key, config, modelDir: dir, versionDir: path.join(dir, '1'), version: 1 });
  const cancels = new CancelRegistry(port);
  await cancels.start();
  const agent = new WorkerAgent(port, cluster, host, cancels, workerId);
  await agent.serve({ name: model, version: 1, localKey: key, config, instances: 1, depth: 1 });
  return {
    config,
    stop: async () => {
      await agent.stop();
      await cancels.stop();
      await host.unload(key);
      await port.close();
    },
  };
}

/** The gateway side: requests on their version's queue, final answers from its mailbox. */
async function startGateway(broker: InMemoryBroker): Promise<{
  answers: Map<string, ResponseMessage>;
  send: (model: string, wire: Omit<WireRequest, 'requestId' | 'replyTo' | 'modelName' | 'modelVersion'>) => Promise<string>;
  stop: () => Promise<void>;
}> {
  const port = new InMemoryPort(broker);
  const router = new ResponseRouter(port, 'gw');
  await router.start();
  const answers = new Map<string, ResponseMessage>();
  return {
    answers,
    send: async (model, wire) => {
      const requestId = router.nextRequestId();
      router.register(requestId, { onResponse: (m) => m.final && answers.set(requestId, m) });
      await port.enqueue(requestQueueOf(model, 1), {
        kind: 'execute-batch', batchId: requestId, key: `${model}/1`, instance: -1, slot: 0,
        requests: [{ ...wire, requestId, replyTo: 'gw', modelName: model, modelVersion: 1 }],
      });
      return requestId;
    },
    stop: async () => {
      await router.stop();
      await port.close();
    },
  };
}

const NOT_IN_SEQUENCE = { correlationId: 0n, flags: { sequenceStart: false, sequenceEnd: false } };
const REQUEST = { parameters: {}, priority: 0, timeoutUs: 0 };

describe('SchedulerAgent: a scheduler that loses its lease (in-memory port, leases in a real redis-server, real onnxruntime worker)', () => {
  it('stops dispatching at once, even what its batcher holds; the next holder takes the unacked requests over and answers them', async () => {
    const prefix = `agent-spec-${process.pid}:`;
    const broker = new InMemoryBroker();
    const cluster = new MemoryClusterModels();
    // The worker: `simple` with a 3 s queue delay, so that a batcher holds requests for a while.
    const worker = await startWorker(broker, cluster, 'w1', 'simple', (c) => ({ ...c, dynamic_batching: { max_queue_delay_microseconds: 3_000_000 } }));
    const gateway = await startGateway(broker);
    const answers = gateway.answers;
    const send = (n: number): Promise<string> =>
      gateway.send('simple', {
        ...REQUEST, ...NOT_IN_SEQUENCE, clientId: `c${n}`,
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Int32Array.from({ length: 16 }, (_, i) => n + i) },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: new Int32Array(16).fill(1) },
        ],
      });
    const logs: string[] = [];
    const scheduler = (id: string, sent: ExecuteBatchMessage[]): SchedulerAgent =>
      new SchedulerAgent(recording(new InMemoryPort(broker), sent), cluster, id, (_l, m) => logs.push(m), {
        leases: new RedisLeaseStore(kv, prefix),
        sequences: new RedisSequenceRegistry(kv, prefix),
      });
    const [sentA, sentB]: ExecuteBatchMessage[][] = [[], []];
    const a = scheduler('sched-a', sentA);
    const b = scheduler('sched-b', sentB);
    const lease = `${prefix}lease:simple/1`;
    try {
      await a.start();
      await until('A holds the lease', async () => (await kv.get(lease))?.startsWith('sched-a#') === true, 5000);
      await b.start();
      const fenceA = Number((await kv.get(lease))!.split('#')[1]);
      // Three requests: A's batcher holds them for the queue delay.
      const sentAt = Date.now();
      const ids = [await send(100), await send(200), await send(300)];
      await new Promise((r) => setTimeout(r, 100));
      expect(sentA).toEqual([]);
      // Another scheduler holds the lease now (A's expired unnoticed, say): A learns it at its next renewal.
      await kv.set(`${prefix}fence:simple/1`, String(fenceA + 1));
      await kv.set(lease, `intruder#${fenceA + 1}`, 'PX', 10_000);
      await until('A no longer holds it', () => logs.some((l) => /sched-a: no longer holds the lease of 'simple' version 1 \(held by another scheduler\)/.test(l)), 5000);
      // The intruder goes away; A or B takes the lease, with a new fence, and the requests A had taken.
      await kv.del(lease);
      await until('every request answered', () => answers.size === 3, 15_000);
      const fence = Number((await kv.get(lease))!.split('#')[1]);
      expect(fence).toBeGreaterThan(fenceA + 1);
      // Nothing was dispatched under the lost hold; what ran, ran under the new one.
      expect(sentA.filter((m) => m.fence === fenceA)).toEqual([]);
      expect(sentA.length + sentB.length).toBeGreaterThan(0);
      for (const m of [...sentA, ...sentB]) expect(m.fence).toBe(fence);
      for (const [i, id] of ids.entries()) {
        const out = answers.get(id)!;
        expect(out.error).toBeUndefined();
        const sum = out.response!.outputs.find((t) => t.name === 'OUTPUT0')!;
        expect(Array.from(sum.data as Int32Array)).toEqual(Array.from({ length: 16 }, (_, k) => 100 * (i + 1) + k + 1));
      }
      // The lost hold's batcher never dispatches them, not even once its queue delay has passed.
      await new Promise((r) => setTimeout(r, Math.max(0, sentAt + 3500 - Date.now())));
      expect(sentA.filter((m) => m.fence === fenceA)).toEqual([]);
    } finally {
      await a.stop();
      await b.stop();
      await gateway.stop();
      await worker.stop();
    }
  });
});

describe('SchedulerAgent: sequences with implicit state (in-memory port, real onnxruntime workers)', () => {
  it('keeps the state in the scheduler (answers relayed without it), and a live sequence goes on when a worker joins', async () => {
    const prefix = `agent-spec-seq-${process.pid}:`;
    const broker = new InMemoryBroker();
    const cluster = new MemoryClusterModels();
    const workers = [await startWorker(broker, cluster, 'w1', 'accumulator')];
    const gateway = await startGateway(broker);
    const logs: string[] = [];
    const a = new SchedulerAgent(new InMemoryPort(broker), cluster, 'sched-a', (_l, m) => logs.push(m), {
      leases: new RedisLeaseStore(kv, prefix),
      sequences: new RedisSequenceRegistry(kv, prefix),
    });
    /** One step of sequence `id`: its OUTPUT, with the names of every output the gateway got. */
    const step = async (id: bigint, value: number, start: boolean, end = false): Promise<[number, string[]]> => {
      const requestId = await gateway.send('accumulator', {
        ...REQUEST, clientId: `s${id}-${value}`, correlationId: id, flags: { sequenceStart: start, sequenceEnd: end },
        inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: Int32Array.from([value]) }],
      });
      await until(`the answer of ${requestId}`, () => gateway.answers.has(requestId), 10_000);
      const m = gateway.answers.get(requestId)!;
      if (m.error) throw new Error(m.error.message);
      const out = m.response!.outputs;
      return [(out.find((t) => t.name === 'OUTPUT')!.data as Int32Array)[0], out.map((t) => t.name)];
    };
    try {
      await a.start();
      await until('A holds the lease', () => logs.some((l) => l.includes("holds the lease of 'accumulator' version 1")), 5000);
      expect(await step(7n, 5, true)).toEqual([5, ['OUTPUT']]);
      expect(await step(7n, 6, false)).toEqual([11, ['OUTPUT']]);
      // A second worker joins: the scheduler batches for 2 instances from now on; sequence 7 stays where it is.
      workers.push(await startWorker(broker, cluster, 'w2', 'accumulator'));
      await until('A batches for 2 instances', () => logs.some((l) => l.includes("batching 'accumulator/1' for 2 instance(s)")), 5000);
      expect(await step(7n, 7, false)).toEqual([18, ['OUTPUT']]);
      expect(await step(8n, 100, true)).toEqual([100, ['OUTPUT']]);
      expect(await step(7n, 1, false, true)).toEqual([19, ['OUTPUT']]);
      expect(await step(8n, 1, false, true)).toEqual([101, ['OUTPUT']]);
    } finally {
      await a.stop();
      await gateway.stop();
      for (const w of workers) await w.stop();
    }
  });
});

describe('SchedulerAgent: stopping', () => {
  it('gives its leases up, so that another scheduler takes them at its next try rather than after the TTL', async () => {
    const prefix = `agent-spec-stop-${process.pid}:`;
    const broker = new InMemoryBroker();
    const cluster = new MemoryClusterModels();
    const worker = await startWorker(broker, cluster, 'w1', 'simple');
    const state = { leases: new RedisLeaseStore(kv, prefix), sequences: new RedisSequenceRegistry(kv, prefix) };
    const a = new SchedulerAgent(new InMemoryPort(broker), cluster, 'sched-a', () => undefined, state);
    const b = new SchedulerAgent(new InMemoryPort(broker), cluster, 'sched-b', () => undefined, state);
    const lease = `${prefix}lease:simple/1`;
    try {
      await a.start();
      await until('A holds the lease', async () => (await kv.get(lease))?.startsWith('sched-a#') === true, 5000);
      await b.start();
      const stoppedAt = Date.now();
      await a.stop();
      await until('B holds the lease', async () => (await kv.get(lease))?.startsWith('sched-b#') === true, 5000);
      // One try of B (every 750 ms), not the 3 s TTL.
      expect(Date.now() - stoppedAt).toBeLessThan(2000);
    } finally {
      await a.stop();
      await b.stop();
      await worker.stop();
    }
  });
});

describe('SchedulerAgent: batch-done reports', () => {
  it("acks the requests of every batch one batch-done message reports (its first and its 'more'), and ignores unknown batch ids", async () => {
    const prefix = `agent-spec-done-${process.pid}:`;
    const broker = new InMemoryBroker();
    const cluster = new MemoryClusterModels();
    const file = path.join(ROOT, 'models/simple/config.pbtxt');
    const config: ModelConfig = { ...parseModelConfig(readFileSync(file, 'utf8'), file), backend: 'onnxruntime', instance_group: [{ kind: 'KIND_CPU', count: 1 }] };
    await cluster.publish({ name: 'simple', version: 1, workerId: 'w1', config, instances: 1, depth: 1, at: Date.now() });
    // A stand-in worker: takes the batches, answers nothing until told to.
    const workerPort = new InMemoryPort(broker);
    const batches: ExecuteBatchMessage[] = [];
    await workerPort.consume(workQueueOf('w1', 'simple', 1), (d) => {
      if (d.message.kind === 'execute-batch') batches.push(d.message, ...(d.message.more ?? []));
      void d.ack();
    });
    // The scheduler's request-queue acks, by request id.
    const acked: string[] = [];
    const port = recordingPort(new InMemoryPort(broker), { acked: (m) => m.kind === 'execute-batch' && acked.push(m.requests[0].requestId) });
    const gateway = await startGateway(broker);
    const a = new SchedulerAgent(port, cluster, 'sched-a', () => undefined, {
      leases: new RedisLeaseStore(kv, prefix),
      sequences: new RedisSequenceRegistry(kv, prefix),
    });
    try {
      await a.start();
      await until('A holds the lease', async () => (await kv.get(`${prefix}lease:simple/1`))?.startsWith('sched-a#') === true, 5000);
      const input = { name: 'INPUT0', datatype: 'INT32' as const, shape: [1, 16], data: new Int32Array(16) };
      const ids: string[] = [];
      for (let n = 0; n < 3; n++) ids.push(await gateway.send('simple', { ...REQUEST, ...NOT_IN_SEQUENCE, clientId: `c${n}`, inputs: [input, { ...input, name: 'INPUT1' }] }));
      await until('three batches dispatched', () => batches.length === 3, 5000);
      expect(acked).toEqual([]);
      const report = { batchSize: 1, requestCount: 1, compute: { inputNs: 0, inferNs: 0, outputNs: 0 } };
      await workerPort.enqueue(requestQueueOf('simple', 1), {
        kind: 'batch-done', key: 'simple/1', workerId: 'w1', batchId: batches[0].batchId, ...report,
        more: [{ batchId: 'sched-z:1', ...report }, { batchId: batches[1].batchId, ...report }, { batchId: batches[2].batchId, ...report }],
      });
      await until('every request acked', () => acked.length === 3, 5000);
      expect(acked.sort()).toEqual([...ids].sort());
    } finally {
      await a.stop();
      await gateway.stop();
      await workerPort.close();
    }
  });
});

describe('SchedulerAgent: a message of several requests', () => {
  it('batches and answers each of its requests, and acks the message once, when all of them are done', async () => {
    const prefix = `agent-spec-many-${process.pid}:`;
    const broker = new InMemoryBroker();
    const cluster = new MemoryClusterModels();
    const worker = await startWorker(broker, cluster, 'w1', 'simple');
    const acked: string[][] = [];
    const port = recordingPort(new InMemoryPort(broker), { acked: (m) => m.kind === 'execute-batch' && acked.push(m.requests.map((r) => r.requestId)) });
    const a = new SchedulerAgent(port, cluster, 'sched-a', () => undefined, {
      leases: new RedisLeaseStore(kv, prefix),
      sequences: new RedisSequenceRegistry(kv, prefix),
    });
    const gatewayPort = new InMemoryPort(broker);
    const router = new ResponseRouter(gatewayPort, 'gw');
    await router.start();
    const answers = new Map<string, ResponseMessage>();
    try {
      await a.start();
      await until('A holds the lease', async () => (await kv.get(`${prefix}lease:simple/1`))?.startsWith('sched-a#') === true, 5000);
      const requests: WireRequest[] = [100, 200, 300].map((n) => {
        const requestId = router.nextRequestId();
        router.register(requestId, { onResponse: (m) => m.final && answers.set(requestId, m) });
        return {
          ...REQUEST, ...NOT_IN_SEQUENCE, requestId, replyTo: 'gw', clientId: `c${n}`, modelName: 'simple', modelVersion: 1,
          inputs: [
            { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Int32Array.from({ length: 16 }, (_, i) => n + i) },
            { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: new Int32Array(16).fill(1) },
          ],
        };
      });
      await gatewayPort.enqueue(requestQueueOf('simple', 1), { kind: 'execute-batch', batchId: 'gw:turn', key: 'simple/1', instance: -1, slot: 0, requests });
      await until('every request answered', () => answers.size === 3, 10_000);
      for (const [i, r] of requests.entries()) {
        const out = answers.get(r.requestId)!;
        expect(out.error).toBeUndefined();
        const sum = out.response!.outputs.find((t) => t.name === 'OUTPUT0')!;
        expect(Array.from(sum.data as Int32Array)).toEqual(Array.from({ length: 16 }, (_, k) => 100 * (i + 1) + k + 1));
      }
      await until('the message acked', () => acked.some((ids) => ids.length === 3), 5000);
      await new Promise((r) => setTimeout(r, 100));
      expect(acked.filter((ids) => ids.length === 3)).toEqual([requests.map((r) => r.requestId)]);
    } finally {
      await a.stop();
      await router.stop();
      await gatewayPort.close();
      await worker.stop();
    }
  });
});

import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import Redis from 'ioredis';
import { BackendRegistry, OnnxRuntimeBackend } from '@nereid/backends';
import { parseModelConfig } from '@nereid/model-config';
import {
  CancelRegistry, InMemoryBroker, InMemoryPort, ResponseRouter,
  type ExecuteBatchMessage, type MessagePort, type ResponseMessage, type TransportMessage,
} from '@nereid/transport';
import { MemoryClusterModels, requestQueueOf, WorkerAgent, WorkerHost } from '@nereid/worker';
import { until } from '../../../test/helpers/poll';
import { startRedis, type RedisServer } from '../../../test/helpers/redis-server';
import { RedisLeaseStore } from './redis-leases';
import { SchedulerAgent } from './scheduler-agent';
import { RedisSequenceRegistry } from './sequence-registry';

const MODEL = path.resolve(__dirname, '../../../models/simple');

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

describe('SchedulerAgent: a scheduler that loses its lease (in-memory port, leases in a real redis-server, real onnxruntime worker)', () => {
  it('stops dispatching at once, even what its batcher holds; the next holder takes the unacked requests over and answers them', async () => {
    const prefix = `agent-spec-${process.pid}:`;
    const broker = new InMemoryBroker();
    const cluster = new MemoryClusterModels();
    // The worker: `simple` with a 3 s queue delay, so that a batcher holds requests for a while.
    const workerPort = new InMemoryPort(broker);
    const host = new WorkerHost(
      new BackendRegistry().register(new OnnxRuntimeBackend()),
      { infer: () => Promise.reject(new Error('no BLS here')), onBatch: () => undefined },
      () => undefined,
    );
    const file = path.join(MODEL, 'config.pbtxt');
    const config = {
      ...parseModelConfig(readFileSync(file, 'utf8'), file),
      backend: 'onnxruntime',
      instance_group: [{ kind: 'KIND_CPU' as const, count: 1 }],
      dynamic_batching: { max_queue_delay_microseconds: 3_000_000 },
    };
    await host.load({ key: 'simple:1', config, modelDir: MODEL, versionDir: path.join(MODEL, '1'), version: 1 });
    const cancels = new CancelRegistry(workerPort);
    await cancels.start();
    const worker = new WorkerAgent(workerPort, cluster, host, cancels, 'w1');
    await worker.serve({ name: 'simple', version: 1, localKey: 'simple:1', config, instances: 1, depth: 1 });
    // The gateway side: requests on the version's queue, answers in its mailbox.
    const gatewayPort = new InMemoryPort(broker);
    const router = new ResponseRouter(gatewayPort, 'gw');
    await router.start();
    const answers = new Map<string, ResponseMessage>();
    const send = async (n: number): Promise<string> => {
      const requestId = router.nextRequestId();
      router.register(requestId, { onResponse: (m) => m.final && answers.set(requestId, m) });
      await gatewayPort.enqueue(requestQueueOf('simple', 1), {
        kind: 'execute-batch', batchId: requestId, key: 'simple/1', instance: -1, slot: 0,
        requests: [{
          requestId, replyTo: 'gw', clientId: `c${n}`, modelName: 'simple', modelVersion: 1, parameters: {}, correlationId: 0n,
          flags: { sequenceStart: false, sequenceEnd: false }, priority: 0, timeoutUs: 0,
          inputs: [
            { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Int32Array.from({ length: 16 }, (_, i) => n + i) },
            { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: new Int32Array(16).fill(1) },
          ],
        }],
      });
      return requestId;
    };
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
      await router.stop();
      await worker.stop();
      await cancels.stop();
      await host.unload('simple:1');
      await Promise.all([workerPort.close(), gatewayPort.close()]);
    }
  });
});

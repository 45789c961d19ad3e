import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { BackendRegistry, OnnxRuntimeBackend } from '@nereid/backends';
import { parseModelConfig } from '@nereid/model-config';
import {
  CancelRegistry, InMemoryBroker, InMemoryPort, Names,
  type ExecuteBatchMessage, type ModelKey, type TransportMessage, type WireRequest,
} from '@nereid/transport';
import { until } from '../../../test/helpers/poll';
import { BatchFences } from './batch-fences';
import { MemoryClusterModels, requestQueueOf, workQueueOf } from './cluster-models';
import { WorkerAgent } from './worker-agent';
import { WorkerHost } from './worker-host';

const MODEL = path.resolve(__dirname, '../../../models/simple');

const int32 = (name: string, values: number[]) => ({ name, datatype: 'INT32' as const, shape: [1, 16], data: Int32Array.from(values) });

function wire(requestId: string, base: number): WireRequest {
  return {
    requestId, replyTo: 'gw', clientId: requestId, modelName: 'simple', modelVersion: 1,
    inputs: [int32('INPUT0', Array.from({ length: 16 }, (_, i) => base + i)), int32('INPUT1', new Array(16).fill(1))],
    parameters: {}, correlationId: 0n, flags: { sequenceStart: false, sequenceEnd: false }, priority: 0, timeoutUs: 0,
  };
}

function batch(scheduler: string, n: number, fence: number | undefined): ExecuteBatchMessage {
  return {
    kind: 'execute-batch', batchId: `${scheduler}:${n}`, key: 'simple/1', instance: 0, slot: 0,
    requests: [wire(`${scheduler}-${n}`, n)], ...(fence === undefined ? {} : { fence }),
  };
}

describe('worker: lease fencing of batches (in-memory port, real onnxruntime)', () => {
  it('runs batches whose fence is the highest seen, ignores older ones (logged once per scheduler), and runs unfenced ones', async () => {
    const port = new InMemoryPort(new InMemoryBroker());
    const host = new WorkerHost(
      new BackendRegistry().register(new OnnxRuntimeBackend()),
      { infer: () => Promise.reject(new Error('no BLS here')), onBatch: () => undefined },
      () => undefined,
    );
    const file = path.join(MODEL, 'config.pbtxt');
    const config = { ...parseModelConfig(readFileSync(file, 'utf8'), file), backend: 'onnxruntime', instance_group: [{ kind: 'KIND_CPU' as const, count: 1 }] };
    const localKey: ModelKey = 'simple:1';
    await host.load({ key: localKey, config, modelDir: MODEL, versionDir: path.join(MODEL, '1'), version: 1 });
    const cancels = new CancelRegistry(port);
    await cancels.start();
    const warnings: string[] = [];
    const agent = new WorkerAgent(port, new MemoryClusterModels(), host, cancels, 'w1', new BatchFences((m) => warnings.push(m)));
    const answered: string[] = [];
    const done: string[] = [];
    await port.receive(Names.gatewayMailbox('gw'), (m: TransportMessage) => {
      if (m.kind === 'response' && m.final) {
        expect(m.error).toBeUndefined();
        answered.push(m.requestId);
      }
    });
    // The batch-done reports come through the version's request queue, whoever holds it.
    await port.consume(requestQueueOf('simple', 1), (d) => {
      if (d.message.kind === 'batch-done') done.push(d.message.batchId, ...(d.message.more ?? []).map((r) => r.batchId));
      void d.ack();
    });
    try {
      await agent.serve({ name: 'simple', version: 1, localKey, config, instances: 1, depth: 1 });
      const queue = workQueueOf('w1', 'simple', 1);
      // 'old' held the lease with fence 5; 'new' took it over with fence 9; 'old' goes on for a while.
      for (const m of [batch('old', 1, 5), batch('new', 1, 9), batch('old', 2, 5), batch('old', 3, 5), batch('new', 2, 9), batch('embedded', 1, undefined)]) {
        await port.enqueue(queue, m);
      }
      await until('the admitted batches are answered', () => answered.length === 4 && done.length === 4, 10_000);
      // Give an ignored batch every chance to show up.
      await new Promise((r) => setTimeout(r, 200));
      expect(answered.sort()).toEqual(['embedded-1', 'new-1', 'new-2', 'old-1']);
      expect(done.sort()).toEqual(['embedded:1', 'new:1', 'new:2', 'old:1']);
      expect(warnings).toEqual([
        "worker: ignoring batches of 'simple/1' from old: their lease fence 5 is older than 9 (that scheduler lost the lease)",
      ]);
    } finally {
      await agent.stop();
      await cancels.stop();
      await host.unload(localKey);
      await port.close();
    }
  });
});

import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { BackendRegistry, OnnxRuntimeBackend } from '@nereid/backends';
import { parseModelConfig } from '@nereid/model-config';
import {
  CancelRegistry, InMemoryBroker, InMemoryPort, Names,
  type ExecuteBatchMessage, type ModelKey, type TransportMessage, type WireRequest,
} from '@nereid/transport';
import { until } from '../../../test/helpers/poll';
import { recordingPort } from '../../../test/helpers/recording-port';
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

/** A worker agent serving `simple` on a real onnxruntime host over an in-memory port; what it answers, reports and acks. */
async function startAgent() {
  const inner = new InMemoryPort(new InMemoryBroker());
  // The agent's work-queue acks, by batch id, and how many final answers it had sent by each.
  const acked: string[] = [];
  const sentAtAck: number[] = [];
  let sent = 0;
  const port = recordingPort(inner, {
    acked: (m) => {
      if (m.kind !== 'execute-batch') return;
      acked.push(m.batchId);
      sentAtAck.push(sent);
    },
    sent: (_to, m) => {
      if (m.kind === 'response' && m.final) sent++;
    },
  });
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
  await inner.receive(Names.gatewayMailbox('gw'), (m: TransportMessage) => {
    if (m.kind === 'response' && m.final) {
      expect(m.error).toBeUndefined();
      answered.push(m.requestId);
    }
  });
  // The batch-done reports come through the version's request queue, whoever holds it.
  await inner.consume(requestQueueOf('simple', 1), (d) => {
    if (d.message.kind === 'batch-done') done.push(d.message.batchId, ...(d.message.more ?? []).map((r) => r.batchId));
    void d.ack();
  });
  await agent.serve({ name: 'simple', version: 1, localKey, config, instances: 1, depth: 1 });
  return {
    port: inner, answered, done, warnings, acked, sentAtAck,
    stop: async () => {
      await agent.stop();
      await cancels.stop();
      await host.unload(localKey);
      await inner.close();
    },
  };
}

describe('worker: lease fencing of batches (in-memory port, real onnxruntime)', () => {
  it('runs batches whose fence is the highest seen, ignores older ones (logged once per scheduler), and runs unfenced ones', async () => {
    const { port, answered, done, warnings, stop } = await startAgent();
    try {
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
      await stop();
    }
  });

  it("runs every batch of a message (its 'more' too, each fenced on its own), reports each, and acks the message once all are done", async () => {
    const { port, answered, done, acked, sentAtAck, stop } = await startAgent();
    try {
      const queue = workQueueOf('w1', 'simple', 1);
      await port.enqueue(queue, batch('new', 1, 9));
      await until('the first batch is answered', () => answered.length === 1 && acked.length === 1, 10_000);
      // One message: two batches of 'new', and one of 'old' whose lease has been taken over.
      await port.enqueue(queue, { ...batch('new', 2, 9), more: [batch('old', 1, 5), batch('new', 3, 9)] });
      await until('the admitted batches are answered', () => answered.length === 3 && done.length === 3, 10_000);
      await until('the message is acked', () => acked.length === 2, 5000);
      expect(answered.sort()).toEqual(['new-1', 'new-2', 'new-3']);
      expect(done.sort()).toEqual(['new:1', 'new:2', 'new:3']);
      expect(acked).toEqual(['new:1', 'new:2']);
      // The second message only once both of its admitted batches had answered (not at its first batch's end, nor at the refused one's).
      expect(sentAtAck).toEqual([1, 3]);
    } finally {
      await stop();
    }
  });
});

import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { BackendRegistry, OnnxRuntimeBackend } from '@nereid/backends';
import { parseModelConfig } from '@nereid/model-config';
import type { ExecutionItem, InferenceRequest, InferenceResponse } from '@nereid/protocol';
import type { Tensor } from '@nereid/tensor';
import type { BatchReport, ModelKey } from '@nereid/transport';
import { WorkerHost } from './worker-host';

const FIXTURE = path.resolve(__dirname, '../../../test/fixtures/onnx/accumulator_short_idle');
const int32 = (name: string, value: number): Tensor => ({ name, datatype: 'INT32', shape: [1, 1], data: Int32Array.from([value]) });

function row(input: number, padding: boolean): InferenceRequest {
  return {
    id: padding ? '' : `r${input}`, modelName: 'accumulator_short_idle', modelVersion: -1, parameters: {},
    inputs: [int32('INPUT', input), int32('START', padding ? 0 : 1), int32('READY', padding ? 0 : 1), int32('ACC_IN', 0)],
    sequenceId: padding ? 0n : BigInt(input), sequenceStart: !padding, sequenceEnd: false, priority: 0, timeoutUs: 0,
    ...(padding ? { padding: true } : {}),
  };
}

describe('WorkerHost statistics of a batch with padding rows', () => {
  it('reports the execution with the live rows only as its inferences', async () => {
    const reports: BatchReport[] = [];
    const host = new WorkerHost(
      new BackendRegistry().register(new OnnxRuntimeBackend()),
      { infer: () => Promise.reject(new Error('no BLS here')), onBatch: (r) => reports.push(r) },
      () => undefined,
    );
    const file = path.join(FIXTURE, 'config.pbtxt');
    const config = { ...parseModelConfig(readFileSync(file, 'utf8'), file), instance_group: [{ kind: 'KIND_CPU', count: 1 }] };
    const key: ModelKey = 'accumulator_short_idle:1';
    await host.load({ key, config, modelDir: FIXTURE, versionDir: path.join(FIXTURE, '1'), version: 1 });
    try {
      const answers: (InferenceResponse | undefined)[] = [];
      const items: ExecutionItem[] = [row(4, false), row(0, true), row(6, false), row(0, true)].map((request, i) => ({
        request,
        sink: { send: (r) => void (answers[i] = r), fail: (e) => { throw e; } },
      }));
      await host.execute(key, 0, items);
      expect(answers.filter((a) => a !== undefined)).toHaveLength(4);
      expect(reports).toEqual([expect.objectContaining({ key, batchSize: 2, requestCount: 2 })]);
    } finally {
      await host.unload(key);
    }
  });
});

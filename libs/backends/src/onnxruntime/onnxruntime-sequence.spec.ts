import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseModelConfig, type ModelConfig } from '@nereid/model-config';
import type { InferenceRequest } from '@nereid/protocol';
import type { ModelInstance } from '../backend';
import { OnnxRuntimeBackend } from './onnxruntime-backend';
import type { OnnxRuntimeInstance } from './onnxruntime-instance';
import { FIXTURES, int32, loadContext, outputOf, probe, request } from './onnxruntime.testing';

/**
 * What the sequence batcher hands the ONNX backend: control and state tensors as ordinary inputs
 * (not in config.input), state outputs named in the request (not in config.output), padding rows.
 */
const backend = new OnnxRuntimeBackend();

function shippedConfig(dir: string): ModelConfig {
  const file = path.join(dir, 'config.pbtxt');
  return parseModelConfig(readFileSync(file, 'utf8'), file);
}

const u64 = (name: string, value: bigint) => ({ name, datatype: 'UINT64' as const, shape: [1, 1], data: BigUint64Array.from([value]) });

/** One accumulator row as the batcher builds it: INPUT from the client, START/READY/ACC_IN from the server. */
function accumulatorRow(input: number, acc: number, start: boolean, outputs?: string[], padding = false): InferenceRequest {
  const req = request(
    'accumulator_short_idle',
    [int32('INPUT', [1, 1], [input]), int32('START', [1, 1], [start ? 1 : 0]), int32('READY', [1, 1], [padding ? 0 : 1]), int32('ACC_IN', [1, 1], [acc])],
    outputs,
    padding ? '' : `row-${input}`,
  );
  return padding ? { ...req, padding: true } : req;
}

describe('OnnxRuntimeBackend with sequence batching', () => {
  let accumulator: ModelInstance;

  beforeAll(async () => {
    // The accumulator of models/ (same graph), as a test fixture.
    const dir = path.join(FIXTURES, 'accumulator_short_idle');
    accumulator = await backend.loadInstance(loadContext(dir, shippedConfig(dir)));
  });
  afterAll(() => accumulator.unload());

  it('loads Triton-style sequence models whose controls and states are graph inputs', async () => {
    for (const name of ['simple_sequence', 'simple_dyna_sequence']) {
      const dir = path.join(FIXTURES, name);
      const instance = await backend.loadInstance(loadContext(dir, shippedConfig(dir)));
      await instance.unload();
    }
  });

  it('feeds control and state inputs the config does not list and returns the state output the request names', async () => {
    const p = probe(accumulatorRow(5, 10, false, ['OUTPUT', 'ACC_OUT']));
    await accumulator.execute([p.item]);
    const response = await p.result;
    expect(Array.from(outputOf(response, 'OUTPUT').data as Int32Array)).toEqual([15]);
    expect(outputOf(response, 'ACC_OUT')).toMatchObject({ datatype: 'INT32', shape: [1, 1] });
    expect(Array.from(outputOf(response, 'ACC_OUT').data as Int32Array)).toEqual([15]);
  });

  it('returns the state outputs with the config outputs when the request names none', async () => {
    const p = probe(accumulatorRow(3, 100, true));
    await accumulator.execute([p.item]);
    const response = await p.result;
    if (!('outputs' in response)) throw new Error(response.message);
    expect(response.outputs.map((o) => o.name)).toEqual(['OUTPUT', 'ACC_OUT']);
    // START restarts the sum: ACC_IN is ignored.
    expect(Array.from(outputOf(response, 'ACC_OUT').data as Int32Array)).toEqual([3]);
  });

  it('runs a batch of slots, padding rows included, in one session run, each row with its own state', async () => {
    const rows = [accumulatorRow(1, 10, false, ['OUTPUT', 'ACC_OUT']), accumulatorRow(0, 0, false, ['OUTPUT', 'ACC_OUT'], true), accumulatorRow(2, 20, true, ['OUTPUT', 'ACC_OUT'])];
    const probes = rows.map((r) => probe(r));
    const runsBefore = (accumulator as OnnxRuntimeInstance).sessionRuns;
    await accumulator.execute(probes.map((p) => p.item));
    expect((accumulator as OnnxRuntimeInstance).sessionRuns - runsBefore).toBe(1);
    const sums = await Promise.all(probes.map(async (p) => Array.from(outputOf(await p.result, 'ACC_OUT').data as Int32Array)));
    // READY=0 passes ACC_IN through untouched.
    expect(sums).toEqual([[11], [0], [2]]);
  });

  it('feeds a UINT64 CORRID control to simple_dyna_sequence', async () => {
    const dir = path.join(FIXTURES, 'simple_dyna_sequence');
    const instance = await backend.loadInstance(loadContext(dir, shippedConfig(dir)));
    try {
      const row = request('simple_dyna_sequence', [
        int32('INPUT', [1, 1], [7]), int32('START', [1, 1], [0]), int32('END', [1, 1], [1]), int32('READY', [1, 1], [1]), u64('CORRID', 1000n),
      ]);
      const p = probe(row);
      await instance.execute([p.item]);
      // READY ? INPUT + START + END * CORRID : 0
      expect(Array.from(outputOf(await p.result, 'OUTPUT').data as Int32Array)).toEqual([1007]);
    } finally {
      await instance.unload();
    }
  });

  it('still refuses an output that is neither a config output nor a state output', async () => {
    const p = probe(accumulatorRow(1, 0, true, ['NOT_THERE']));
    await accumulator.execute([p.item]);
    expect(await p.result).toMatchObject({ code: 'INVALID_ARG', message: "unexpected inference output 'NOT_THERE' for model 'accumulator_short_idle'" });
  });
});

import { mkdtempSync, mkdirSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { ModelConfig } from '@nereid/model-config';
import { InferenceError } from '@nereid/protocol';
import { OnnxRuntimeBackend } from './onnxruntime-backend';
import { EVENT_LOOP_BUDGET_US } from './session-probe';
import { FIXTURES, MODELS, fp32, loadContext, outputOf, probe, request } from './onnxruntime.testing';

const backend = new OnnxRuntimeBackend();
const addDir = path.join(FIXTURES, 'autocomplete_add');

const autoCtx = (config: ModelConfig, dir = addDir) => ({
  config,
  modelDir: dir,
  versionDir: path.join(dir, '1'),
  defaultMaxBatchSize: 4,
});

describe('OnnxRuntimeBackend', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(path.join(tmpdir(), 'nereid-ort-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('declares its name, default file and Triton\'s default CPU instance count', () => {
    expect(backend).toMatchObject({ name: 'onnxruntime', defaultModelFilename: 'model.onnx', defaultCpuInstanceCount: 2 });
  });

  it('auto-completes a config-less model from its file, then serves it', async () => {
    const config = await backend.autoComplete(autoCtx({ name: 'autocomplete_add', backend: 'onnxruntime' }));
    expect(config).toEqual({
      name: 'autocomplete_add',
      backend: 'onnxruntime',
      max_batch_size: 4,
      dynamic_batching: {},
      input: [
        { name: 'A', data_type: 'TYPE_FP32', dims: [4] },
        { name: 'B', data_type: 'TYPE_FP32', dims: [4] },
      ],
      output: [
        { name: 'SUM', data_type: 'TYPE_FP32', dims: [4] },
        { name: 'DIFF', data_type: 'TYPE_FP32', dims: [4] },
      ],
    });
    const instance = await backend.loadInstance(loadContext(addDir, config));
    try {
      const p = probe(request('autocomplete_add', [fp32('A', [1, 4], [1, 2, 3, 4]), fp32('B', [1, 4], [4, 3, 2, 1])]));
      await instance.execute([p.item]);
      expect(Array.from(outputOf(await p.result, 'SUM').data as Float32Array)).toEqual([5, 5, 5, 5]);
      expect(Array.from(outputOf(await p.result, 'DIFF').data as Float32Array)).toEqual([-3, -1, 1, 3]);
    } finally {
      await instance.unload();
    }
  });

  it('fills only the missing outputs of a partial config', async () => {
    const input = [{ name: 'A', data_type: 'TYPE_FP32', dims: [4] }, { name: 'B', data_type: 'TYPE_FP32', dims: [4] }];
    const config = await backend.autoComplete(autoCtx({ name: 'autocomplete_add', max_batch_size: 2, input }));
    expect(config.input).toEqual(input);
    expect(config.max_batch_size).toBe(2);
    expect(config.output?.map((o) => o.name)).toEqual(['SUM', 'DIFF']);
  });

  it('reports a model file it cannot find or parse', async () => {
    await expect(backend.autoComplete(autoCtx({ name: 'nothing' }, path.join(tmp, 'absent')))).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: expect.stringContaining("unable to find '"),
    });
    const dir = corruptModel(tmp, 'corrupt_auto');
    await expect(backend.autoComplete(autoCtx({ name: 'corrupt_auto' }, dir))).rejects.toMatchObject({
      code: 'INVALID_ARG',
      message: expect.stringContaining("unable to auto-complete model 'corrupt_auto'"),
    });
  });

  it('fails to load a corrupt model file with ORT\'s reason', async () => {
    const dir = corruptModel(tmp, 'corrupt');
    const err = await backend.loadInstance(loadContext(dir, { name: 'corrupt', max_batch_size: 0 })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InferenceError);
    expect(err).toMatchObject({ code: 'INTERNAL' });
    expect((err as Error).message).toMatch(/^failed to load model 'corrupt' version 1 from '.*model\.onnx': .*(protobuf|pars)/i);
  });

  it('finds model.onnx inside a directory named like the default file', async () => {
    const dir = path.join(tmp, 'dir_model');
    mkdirSync(path.join(dir, '1', 'model.onnx'), { recursive: true });
    copyFileSync(path.join(addDir, '1', 'model.onnx'), path.join(dir, '1', 'model.onnx', 'model.onnx'));
    const config = await backend.autoComplete(autoCtx({ name: 'dir_model' }, dir));
    const instance = await backend.loadInstance(loadContext(dir, config));
    await instance.unload();
    expect(config.input?.length).toBe(2);
  });

  it('fails KIND_GPU clearly when the CUDA execution provider is not there', async () => {
    await expect(
      backend.loadInstance(loadContext(path.join(MODELS, 'simple'), { name: 'simple', max_batch_size: 8 }, { kind: 'KIND_GPU' })),
    ).rejects.toMatchObject({
      code: 'UNAVAILABLE',
      message: expect.stringMatching(/^KIND_GPU requested for model 'simple' but the CUDA execution provider is not available/),
    });
  });

  it('rejects a config whose inputs the ONNX graph does not have', async () => {
    const config: ModelConfig = {
      name: 'autocomplete_add',
      max_batch_size: 4,
      input: [{ name: 'A', data_type: 'TYPE_FP32', dims: [4] }, { name: 'C', data_type: 'TYPE_FP32', dims: [4] }],
      output: [{ name: 'SUM', data_type: 'TYPE_FP32', dims: [4] }],
    };
    await expect(backend.loadInstance(loadContext(addDir, config))).rejects.toMatchObject({
      code: 'INVALID_ARG',
      message: "unexpected inference input 'C', allowed inputs are: A, B (ONNX file '1/model.onnx')",
    });
  });

  it('rejects an invalid thread-count parameter', async () => {
    const config: ModelConfig = { name: 'simple', max_batch_size: 8, parameters: { intra_op_thread_count: { string_value: 'many' } } };
    await expect(backend.loadInstance(loadContext(path.join(MODELS, 'simple'), config))).rejects.toMatchObject({
      code: 'INVALID_ARG',
      message: "invalid value 'many' of parameter 'intra_op_thread_count' for model 'simple': expected a non-negative integer",
    });
  });

  it('rejects an unknown session_thread value', async () => {
    const config: ModelConfig = { name: 'simple', max_batch_size: 8, parameters: { session_thread: { string_value: 'gpu' } } };
    await expect(backend.loadInstance(loadContext(path.join(MODELS, 'simple'), config))).rejects.toMatchObject({
      code: 'INVALID_ARG',
      message: "invalid value 'gpu' of parameter 'session_thread' for model 'simple': expected 'auto', 'worker' or 'event_loop'",
    });
  });

  it('fails requests sent after unload instead of hanging', async () => {
    const config = await backend.autoComplete(autoCtx({ name: 'autocomplete_add' }));
    const instance = await backend.loadInstance(loadContext(addDir, config));
    await instance.unload();
    const p = probe(request('autocomplete_add', [fp32('A', [1, 4], [1, 2, 3, 4]), fp32('B', [1, 4], [1, 2, 3, 4])]));
    await instance.execute([p.item]);
    expect(await p.result).toMatchObject({ code: 'INTERNAL', message: 'the session is closed' });
  });
});

function corruptModel(root: string, name: string): string {
  const dir = path.join(root, name);
  mkdirSync(path.join(dir, '1'), { recursive: true });
  writeFileSync(path.join(dir, '1', 'model.onnx'), Buffer.from('definitely not a protobuf \u0000\u00ff\u00fe model'));
  return dir;
}

describe('OnnxRuntimeBackend session placement (session_thread auto)', () => {
  const backend = new OnnxRuntimeBackend();

  async function placement(dir: string, config: ModelConfig): Promise<string> {
    const lines: string[] = [];
    const ctx = { ...loadContext(dir, config), log: (_level: string, message: string) => void lines.push(message) };
    const instance = await backend.loadInstance(ctx);
    await instance.unload();
    return lines.join('\n');
  }

  /** The probe's figure and the thread chosen, from the load log. */
  function probed(log: string): { micros: number; thread: string } {
    const micros = /probe of '[^']+': (\d+) us/.exec(log);
    const thread = /(event_loop|worker) thread/.exec(log);
    if (!micros || !thread) throw new Error(`no probe or placement in the load log:\n${log}`);
    return { micros: Number(micros[1]), thread: thread[1] };
  }

  it('keeps a tiny model on the event loop and moves a heavy one to a worker thread', async () => {
    const simple: ModelConfig = {
      name: 'simple',
      max_batch_size: 8,
      input: ['INPUT0', 'INPUT1'].map((name) => ({ name, data_type: 'TYPE_INT32', dims: [16] })),
      output: ['OUTPUT0', 'OUTPUT1'].map((name) => ({ name, data_type: 'TYPE_INT32', dims: [16] })),
    };
    const small = probed(await placement(path.join(MODELS, 'simple'), simple));
    const mlp: ModelConfig = {
      name: 'mlp',
      max_batch_size: 64,
      input: [{ name: 'INPUT', data_type: 'TYPE_FP32', dims: [512] }],
      output: [{ name: 'OUTPUT', data_type: 'TYPE_FP32', dims: [512] }],
    };
    const heavy = probed(await placement(path.join(MODELS, 'mlp'), mlp));
    // The placement follows the probe (a loaded machine can slow even `simple` past the budget) ...
    for (const p of [small, heavy]) expect(p.thread).toBe(p.micros <= EVENT_LOOP_BUDGET_US ? 'event_loop' : 'worker');
    // ... and the probe tells the two models apart: a batch of 64 through four 512-wide layers.
    expect(heavy.micros).toBeGreaterThan(small.micros);
    expect(heavy.thread).toBe('worker');
  });
});

import * as path from 'node:path';
import type { ModelConfig } from '@nereid/model-config';
import { InferenceError } from '@nereid/protocol';
import { allocateTensorData, fromConfigType, isReclaimable, RECLAIM_MIN_BYTES } from '@nereid/tensor';
import type { ModelInstance } from '../backend';
import { OnnxRuntimeBackend } from './onnxruntime-backend';
import type { OnnxRuntimeInstance } from './onnxruntime-instance';
import { FIXTURES, MODELS, fp32, int32, loadContext, outputOf, probe, request } from './onnxruntime.testing';

const backend = new OnnxRuntimeBackend();

const simpleConfig: ModelConfig = {
  name: 'simple',
  platform: 'onnxruntime_onnx',
  backend: 'onnxruntime',
  max_batch_size: 8,
  input: [
    { name: 'INPUT0', data_type: 'TYPE_INT32', dims: [16] },
    { name: 'INPUT1', data_type: 'TYPE_INT32', dims: [16] },
  ],
  output: [
    { name: 'OUTPUT0', data_type: 'TYPE_INT32', dims: [16] },
    { name: 'OUTPUT1', data_type: 'TYPE_INT32', dims: [16] },
  ],
};

const range = (n: number, f: (i: number) => number): number[] => Array.from({ length: n }, (_, i) => f(i));

function simpleRequest(batch: number, seed: number, outputs?: string[]) {
  const a = range(16 * batch, (i) => i + seed);
  const b = range(16 * batch, (i) => 2 * i - seed);
  const req = request('simple', [int32('INPUT0', [batch, 16], a), int32('INPUT1', [batch, 16], b)], outputs, `req-${seed}`);
  return { req, sum: a.map((v, i) => v + b[i]), diff: a.map((v, i) => v - b[i]) };
}

describe('OnnxRuntimeInstance on the simple model', () => {
  let instance: ModelInstance;

  beforeAll(async () => {
    instance = await backend.loadInstance(loadContext(path.join(MODELS, 'simple'), simpleConfig));
  });
  afterAll(() => instance.unload());

  it('runs several requests as one batch and answers each with its own slice', async () => {
    const runsBefore = (instance as OnnxRuntimeInstance).sessionRuns;
    const cases = [simpleRequest(1, 1), simpleRequest(3, 7), simpleRequest(2, 100)];
    const probes = cases.map((c) => probe(c.req));
    await instance.execute(probes.map((p) => p.item));
    expect((instance as OnnxRuntimeInstance).sessionRuns - runsBefore).toBe(1);
    for (const [i, c] of cases.entries()) {
      const r = await probes[i].result;
      expect(r).toMatchObject({ id: c.req.id, modelName: 'simple', modelVersion: '1' });
      const out0 = outputOf(r, 'OUTPUT0');
      expect(out0).toMatchObject({ datatype: 'INT32', shape: [c.req.inputs[0].shape[0], 16] });
      expect(Array.from(out0.data as Int32Array)).toEqual(c.sum);
      expect(Array.from(outputOf(r, 'OUTPUT1').data as Int32Array)).toEqual(c.diff);
    }
  });

  it('returns only the requested outputs, in the requested order', async () => {
    const c = simpleRequest(1, 3, ['OUTPUT1']);
    const all = simpleRequest(1, 4, ['OUTPUT1', 'OUTPUT0']);
    const [p1, p2] = [probe(c.req), probe(all.req)];
    await instance.execute([p1.item]); // a partial fetch on its own
    await instance.execute([p2.item]);
    const r1 = await p1.result;
    expect('outputs' in r1 && r1.outputs.map((o) => o.name)).toEqual(['OUTPUT1']);
    expect(Array.from(outputOf(r1, 'OUTPUT1').data as Int32Array)).toEqual(c.diff);
    const r2 = await p2.result;
    expect('outputs' in r2 && r2.outputs.map((o) => o.name)).toEqual(['OUTPUT1', 'OUTPUT0']);
  });

  it('fails a request for an unknown output with Triton wording, and still answers the others', async () => {
    const bad = probe(simpleRequest(1, 5, ['OUTPUT7']).req);
    const good = simpleRequest(1, 6);
    const ok = probe(good.req);
    await instance.execute([bad.item, ok.item]);
    expect(await bad.result).toEqual(new InferenceError('INVALID_ARG', "unexpected inference output 'OUTPUT7' for model 'simple'"));
    expect(Array.from(outputOf(await ok.result, 'OUTPUT0').data as Int32Array)).toEqual(good.sum);
  });

  it('fails only the batch ORT rejects (wrong shape) and keeps the instance usable', async () => {
    const wrong = request('simple', [int32('INPUT0', [1, 15], range(15, (i) => i)), int32('INPUT1', [1, 15], range(15, (i) => i))]);
    const bad = probe(wrong);
    const good = simpleRequest(2, 9);
    const ok = probe(good.req);
    await instance.execute([bad.item, ok.item]);
    const err = await bad.result;
    expect(err).toBeInstanceOf(InferenceError);
    expect(err).toMatchObject({ code: 'INTERNAL' });
    expect((err as InferenceError).message).toMatch(/INPUT0|dimension/i);
    expect(Array.from(outputOf(await ok.result, 'OUTPUT0').data as Int32Array)).toEqual(good.sum);

    const after = simpleRequest(1, 11);
    const again = probe(after.req);
    await instance.execute([again.item]);
    expect(Array.from(outputOf(await again.result, 'OUTPUT1').data as Int32Array)).toEqual(after.diff);
  });

  it('does not touch the caller\'s input buffers (they are copied before the hop to the worker)', async () => {
    const c = simpleRequest(1, 2);
    const p = probe(c.req);
    await instance.execute([p.item]);
    await p.result;
    expect(c.req.inputs[0].data.length).toBe(16);
    expect(Array.from(c.req.inputs[0].data as Int32Array)).toEqual(range(16, (i) => i + 2));
  });
});

describe('OnnxRuntimeInstance on the MLP (worker thread)', () => {
  it('keeps the event loop turning while a heavy batch runs', async () => {
    const dir = path.join(MODELS, 'mlp');
    const config = await backend.autoComplete({ config: { name: 'mlp', max_batch_size: 64 }, modelDir: dir, versionDir: path.join(dir, '1'), defaultMaxBatchSize: 4 });
    const instance = await backend.loadInstance(loadContext(dir, config));
    try {
      // Sixteen full batches joined into one run (1024 rows, tens of ms of work: long enough that a
      // main thread starved by other processes still gets to run while the worker computes). While
      // it runs, count event-loop turns: a session blocking the loop would allow at most the one
      // turn already queued.
      const probes = range(16, (k) => k).map((k) => probe(request('mlp', [fp32('INPUT', [64, 512], range(64 * 512, (i) => Math.sin(i + k)))])));
      let settled = false;
      let turns = 0;
      const all = Promise.all(probes.map((p) => p.result)).then(() => {
        settled = true;
      });
      const tick = (): void => {
        if (settled) return;
        turns++;
        setImmediate(tick);
      };
      setImmediate(tick);
      await instance.execute(probes.map((p) => p.item));
      await all;
      expect(turns).toBeGreaterThan(1);
      for (const p of probes) {
        const out = outputOf(await p.result, 'OUTPUT');
        expect(out.shape).toEqual([64, 512]);
        expect((out.data as Float32Array).every(Number.isFinite)).toBe(true);
      }
    } finally {
      await instance.unload();
    }
  });
});

describe('OnnxRuntimeInstance datatypes, reshape and non-batching models', () => {
  it('maps every datatype both ways through identity_types (BYTES, FP16, BF16, INT64, BOOL...)', async () => {
    const dir = path.join(FIXTURES, 'identity_types');
    const config = await backend.autoComplete({
      config: { name: 'identity_types', max_batch_size: 8 },
      modelDir: dir,
      versionDir: path.join(dir, '1'),
      defaultMaxBatchSize: 4,
    });
    const instance = await backend.loadInstance(loadContext(dir, config));
    try {
      const row = (k: number) => [
        { name: 'IN_BOOL', datatype: 'BOOL' as const, shape: [1, 2], data: Uint8Array.from([k % 2, 1]) },
        { name: 'IN_UINT64', datatype: 'UINT64' as const, shape: [1, 2], data: BigUint64Array.from([BigInt(k), 1n << 63n]) },
        { name: 'IN_INT64', datatype: 'INT64' as const, shape: [1, 2], data: BigInt64Array.from([BigInt(-k), -(1n << 62n)]) },
        { name: 'IN_FP16', datatype: 'FP16' as const, shape: [1, 2], data: Uint16Array.from([0x3c00 + k, 0xc000]) },
        { name: 'IN_FP64', datatype: 'FP64' as const, shape: [1, 2], data: Float64Array.from([Math.PI * k, -1e300]) },
        { name: 'IN_INT8', datatype: 'INT8' as const, shape: [1, 2], data: Int8Array.from([-128, k]) },
        { name: 'IN_UINT16', datatype: 'UINT16' as const, shape: [1, 2], data: Uint16Array.from([65535, k]) },
        { name: 'IN_BYTES', datatype: 'BYTES' as const, shape: [1, 2], data: [new TextEncoder().encode(`héllo ${k}`), new Uint8Array(0)] },
      ];
      const wanted = ['BOOL', 'UINT64', 'INT64', 'FP16', 'FP64', 'INT8', 'UINT16', 'BYTES'].map((d) => `OUT_${d}`);
      // Only the inputs listed are fed; identity_types needs all of them, so feed the rest as well.
      const rest = (k: number) => [
        { name: 'IN_UINT8', datatype: 'UINT8' as const, shape: [1, 2], data: Uint8Array.from([k, 255]) },
        { name: 'IN_UINT32', datatype: 'UINT32' as const, shape: [1, 2], data: Uint32Array.from([k, 4294967295]) },
        { name: 'IN_INT16', datatype: 'INT16' as const, shape: [1, 2], data: Int16Array.from([k, -32768]) },
        { name: 'IN_INT32', datatype: 'INT32' as const, shape: [1, 2], data: Int32Array.from([k, -2147483648]) },
        { name: 'IN_FP32', datatype: 'FP32' as const, shape: [1, 2], data: Float32Array.from([k / 4, -0.5]) },
        { name: 'IN_BF16', datatype: 'BF16' as const, shape: [1, 2], data: Uint16Array.from([0x3f80 + k, 0xc000]) },
      ];
      const probes = [1, 2].map((k) => probe(request('identity_types', [...row(k), ...rest(k)], [...wanted, 'OUT_UINT8', 'OUT_UINT32', 'OUT_INT16', 'OUT_INT32', 'OUT_FP32', 'OUT_BF16'])));
      await instance.execute(probes.map((p) => p.item));
      for (const [i, k] of [1, 2].entries()) {
        const r = await probes[i].result;
        for (const t of [...row(k), ...rest(k)]) {
          const out = outputOf(r, t.name.replace('IN_', 'OUT_'));
          expect(out.datatype).toBe(t.datatype);
          expect(out.shape).toEqual([1, 2]);
          if (t.datatype === 'BYTES') {
            expect((out.data as Uint8Array[]).map((b) => new TextDecoder().decode(b))).toEqual([`héllo ${k}`, '']);
          } else {
            expect(out.data.constructor.name).toBe(t.data.constructor.name); // worker arrays come from another realm under jest
            expect(Array.from(out.data as ArrayLike<unknown>)).toEqual(Array.from(t.data as ArrayLike<unknown>));
          }
        }
      }
    } finally {
      await instance.unload();
    }
  });

  it('carries BF16 bit patterns exactly through a BF16 graph input and output (issue 11, defect 4)', async () => {
    const dir = path.join(FIXTURES, 'identity_types');
    const config = await backend.autoComplete({
      config: { name: 'identity_types', max_batch_size: 8 },
      modelDir: dir,
      versionDir: path.join(dir, '1'),
      defaultMaxBatchSize: 4,
    });
    expect(config.input?.find((i) => i.name === 'IN_BF16')?.data_type).toBe('TYPE_BF16');
    // A model with BF16 graph inputs or outputs failed to load ("Unsupported data type: 16"): every
    // session thread opens it now (auto: the load probe feeds it through the BF16 wrapper).
    for (const thread of ['worker', 'event_loop', 'auto']) {
      const threaded: ModelConfig = { ...config, parameters: { session_thread: { string_value: thread } } };
      const instance = await backend.loadInstance(loadContext(dir, threaded));
      try {
        // -0, ±inf, the smallest subnormal, the largest finite, 1.0; a NaN keeps its sign (ORT's
        // cast makes its payload the quiet NaN's).
        const bits = [0x8000, 0x7f80, 0xff80, 0x0001, 0x7f7f, 0xff7f, 0x3f80, 0x7fc0, 0xffc0];
        const inputs = config.input!.map((i) => {
          const datatype = fromConfigType(i.data_type!)!;
          const n = bits.length;
          const data = i.name === 'IN_BF16' ? Uint16Array.from(bits) : datatype === 'BYTES' ? Array.from({ length: n }, () => new Uint8Array(0)) : allocateTensorData(datatype, n);
          return { name: i.name!, datatype, shape: [1, n], data };
        });
        const p = probe(request('identity_types', inputs, ['OUT_BF16']));
        await instance.execute([p.item]);
        const out = outputOf(await p.result, 'OUT_BF16');
        expect(out).toMatchObject({ datatype: 'BF16', shape: [1, bits.length] });
        expect(Array.from(out.data as Uint16Array)).toEqual(bits);
      } finally {
        await instance.unload();
      }
    }
  });

  it('refuses BYTES onnxruntime-node would alter (NUL, not UTF-8) and runs the rest of the batch (issue 11, defect 3)', async () => {
    const dir = path.join(FIXTURES, 'identity_bytes');
    const config = await backend.autoComplete({ config: { name: 'identity_bytes', max_batch_size: 8 }, modelDir: dir, versionDir: path.join(dir, '1'), defaultMaxBatchSize: 4 });
    const instance = await backend.loadInstance(loadContext(dir, config));
    try {
      const bytes = (...elements: number[][]) => ({ name: 'INPUT0', datatype: 'BYTES' as const, shape: [1, elements.length], data: elements.map((e) => Uint8Array.from(e)) });
      const good = [[0x68, 0xc3, 0xa9], [], [0xe2, 0x98, 0x83]];
      const probes = [
        probe(request('identity_bytes', [bytes([0x61, 0x00, 0x62])])),
        probe(request('identity_bytes', [bytes([0x61], [0xff, 0xfe])])),
        probe(request('identity_bytes', [bytes(...good)])),
      ];
      await instance.execute(probes.map((q) => q.item));
      const [nul, notUtf8, ok] = await Promise.all(probes.map((q) => q.result));
      expect(nul).toBeInstanceOf(InferenceError);
      expect(nul).toMatchObject({
        code: 'INVALID_ARG',
        message: "BYTES element 0 of input 'INPUT0' for model 'identity_bytes' holds a NUL byte, which the onnxruntime backend cannot pass to the model (onnxruntime-node string tensors end at the first NUL)",
      });
      expect(notUtf8).toMatchObject({
        code: 'INVALID_ARG',
        message: "BYTES element 1 of input 'INPUT0' for model 'identity_bytes' is not valid UTF-8, which the onnxruntime backend cannot pass to the model unchanged (onnxruntime-node string tensors hold text)",
      });
      expect((outputOf(ok, 'OUTPUT0').data as Uint8Array[]).map((b) => Array.from(b))).toEqual(good);
    } finally {
      await instance.unload();
    }
  });

  it('feeds the reshaped shape and answers in the config dims', async () => {
    const dir = path.join(FIXTURES, 'identity_fp32');
    const config: ModelConfig = {
      name: 'identity_fp32',
      backend: 'onnxruntime',
      max_batch_size: 8,
      input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [2, 2], reshape: { shape: [4] } }],
      output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [2, 2], reshape: { shape: [4] } }],
    };
    const instance = await backend.loadInstance(loadContext(dir, config));
    try {
      const p = probe(request('identity_fp32', [fp32('INPUT0', [2, 2, 2], [1, 2, 3, 4, 5, 6, 7, 8])]));
      await instance.execute([p.item]);
      const out = outputOf(await p.result, 'OUTPUT0');
      expect(out.shape).toEqual([2, 2, 2]);
      expect(Array.from(out.data as Float32Array)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    } finally {
      await instance.unload();
    }
  });

  it('hands a large output over whole (reclaimable once answered), but never a batch slice shared with other requests', async () => {
    const dir = path.join(FIXTURES, 'identity_fp32');
    const config: ModelConfig = {
      name: 'identity_fp32',
      backend: 'onnxruntime',
      max_batch_size: 8,
      input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
      output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
    };
    const instance = await backend.loadInstance(loadContext(dir, config));
    const n = RECLAIM_MIN_BYTES / 4;
    try {
      const alone = probe(request('identity_fp32', [fp32('INPUT0', [1, n], range(n, (i) => i))]));
      await instance.execute([alone.item]);
      const out = outputOf(await alone.result, 'OUTPUT0');
      expect((out.data as Float32Array)[n - 1]).toBe(n - 1);
      expect(isReclaimable(out.data)).toBe(true);
      const pair = [1, 2].map((k) => probe(request('identity_fp32', [fp32('INPUT0', [1, n], range(n, (i) => i * k))])));
      await instance.execute(pair.map((p) => p.item));
      for (const [i, p] of pair.entries()) {
        const slice = outputOf(await p.result, 'OUTPUT0');
        expect((slice.data as Float32Array)[n - 1]).toBe((n - 1) * (i + 1));
        expect(isReclaimable(slice.data)).toBe(false);
      }
      const small = probe(request('identity_fp32', [fp32('INPUT0', [1, 4], [1, 2, 3, 4])]));
      await instance.execute([small.item]);
      expect(isReclaimable(outputOf(await small.result, 'OUTPUT0').data)).toBe(false);
    } finally {
      await instance.unload();
    }
  });

  it('runs each request of a non-batching model on its own', async () => {
    const dir = path.join(FIXTURES, 'fixed_scale');
    const config = await backend.autoComplete({ config: { name: 'fixed_scale' }, modelDir: dir, versionDir: path.join(dir, '1'), defaultMaxBatchSize: 4 });
    expect(config.max_batch_size).toBe(0);
    const instance = await backend.loadInstance(loadContext(dir, config));
    try {
      const probes = [1, 10].map((k) => probe(request('fixed_scale', [fp32('X', [2, 3], range(6, (i) => i * k))])));
      await instance.execute(probes.map((p) => p.item));
      expect((instance as OnnxRuntimeInstance).sessionRuns).toBe(2);
      for (const [i, k] of [1, 10].entries()) {
        const out = outputOf(await probes[i].result, 'Y');
        expect(out.shape).toEqual([2, 3]);
        expect(Array.from(out.data as Float32Array)).toEqual(range(6, (j) => 2 * j * k));
      }
    } finally {
      await instance.unload();
    }
  });
});

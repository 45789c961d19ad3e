import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { ModelInstance } from '../backend';
import { PythonBackend } from './python-backend';
import { bytes, config, f32, FIXTURES, loadContext, MODELS, request, run, text, values, type LogLine } from './testing';

const backend = new PythonBackend();
const io = (name: string, t = 'TYPE_FP32', dims = [4]): [string, string, number[]] => [name, t, dims];

describe('PythonBackend: example models', () => {
  let addSub: ModelInstance;
  const logs: LogLine[] = [];
  beforeAll(async () => {
    const cfg = config('add_sub', [io('add_sub_input0'), io('add_sub_input1')], [io('added_output'), io('subbed_output')]);
    addSub = await backend.loadInstance(loadContext(MODELS, cfg, logs));
  });
  afterAll(() => addSub.unload());

  it('computes sum and difference', async () => {
    const [s] = await run(addSub, [request('add_sub', [f32('add_sub_input0', [1, 2, 3, 4]), f32('add_sub_input1', [4, 3, 2, 1])], { id: 'r1' })]);
    expect(s.error).toBeUndefined();
    expect(values(s.output('added_output'))).toEqual([5, 5, 5, 5]);
    expect(values(s.output('subbed_output'))).toEqual([-3, -1, 1, 3]);
    expect(s.responses[0]).toMatchObject({ id: 'r1', modelName: 'add_sub', modelVersion: '1' });
    expect(s.finals).toBe(1);
  });

  it('runs a batch of several requests in one execute and keeps them apart', async () => {
    const reqs = [0, 1, 2, 3, 4].map((k) => request('add_sub', [f32('add_sub_input0', [k, k, k, k]), f32('add_sub_input1', [1, 1, 1, 1])]));
    const sinks = await run(addSub, reqs);
    expect(sinks.map((s) => values(s.output('added_output'))[0])).toEqual([1, 2, 3, 4, 5]);
  });

  it('returns only the requested outputs', async () => {
    const [s] = await run(addSub, [request('add_sub', [f32('add_sub_input0', [1, 1, 1, 1]), f32('add_sub_input1', [1, 1, 1, 1])], { outputs: [{ name: 'subbed_output' }] })]);
    expect(s.responses[0].outputs.map((t) => t.name)).toEqual(['subbed_output']);
  });

  it('serves BYTES tensors (string_upper)', async () => {
    const cfg = config('string_upper', [io('text_input', 'TYPE_STRING', [-1])], [io('text_output', 'TYPE_STRING', [-1])], { max_batch_size: 8 });
    const inst = await backend.loadInstance(loadContext(MODELS, cfg));
    try {
      const sinks = await run(inst, [
        request('string_upper', [bytes('text_input', ['hello', 'wörld', ''], [1, 3])]),
        request('string_upper', [bytes('text_input', ['nereid'], [1, 1])]),
      ]);
      expect(text(sinks[0].output('text_output'))).toEqual(['HELLO', 'WÖRLD', '']);
      expect(sinks[0].output('text_output')?.shape).toEqual([1, 3]);
      expect(text(sinks[1].output('text_output'))).toEqual(['NEREID']);
    } finally {
      await inst.unload();
    }
  });

  it('multiplies (mul)', async () => {
    const inst = await backend.loadInstance(loadContext(MODELS, config('mul', [io('mul_input0'), io('mul_input1')], [io('mul_output')])));
    const [s] = await run(inst, [request('mul', [f32('mul_input0', [1, 2, 3, 4]), f32('mul_input1', [2, 2, 2, 0.5])])]);
    await inst.unload();
    expect(values(s.output('mul_output'))).toEqual([2, 4, 6, 2]);
  });

  it('moves a 16 MB tensor through shared memory', async () => {
    const inst = await backend.loadInstance(loadContext(FIXTURES, config('identity', [io('INPUT0', 'TYPE_FP32', [-1])], [io('OUTPUT0', 'TYPE_FP32', [-1])])));
    try {
      const n = 4 * 1024 * 1024;
      const data = new Float32Array(n);
      for (let i = 0; i < n; i += 1024) data[i] = i;
      const [s] = await run(inst, [request('identity', [{ name: 'INPUT0', datatype: 'FP32', shape: [n], data }])]);
      const out = s.output('OUTPUT0');
      expect(out?.shape).toEqual([n]);
      const got = out?.data as Float32Array;
      expect(got.length).toBe(n);
      expect(got[1024 * 1000]).toBe(1024 * 1000);
      expect(Buffer.compare(Buffer.from(got.buffer, got.byteOffset, got.byteLength), Buffer.from(data.buffer))).toBe(0);
    } finally {
      await inst.unload();
    }
  });

  it('reuses shared-memory files, never while a model still holds an input array over one', async () => {
    const prefixFiles = (inst: ModelInstance): string[] => {
      const shm = (inst as unknown as { proc: { shm: { dir: string; prefix: string } } }).proc.shm;
      return readdirSync(shm.dir).filter((n) => n.startsWith(shm.prefix));
    };
    const inst = await backend.loadInstance(loadContext(FIXTURES, config('hoard', [io('INPUT0', 'TYPE_FP32', [-1])], [io('OUTPUT0', 'TYPE_FP32', [-1])])));
    try {
      const n = 1 << 16; // 256 KiB: above the shared-memory threshold
      const tensor = (v: number) => ({ name: 'INPUT0', datatype: 'FP32' as const, shape: [n], data: new Float32Array(n).fill(v) });
      for (let k = 1; k <= 12; k++) {
        const [s] = await run(inst, [request('hoard', [tensor(k)])]);
        expect(s.error).toBeUndefined();
        const got = s.output('OUTPUT0')?.data as Float32Array;
        expect(got.length).toBe(n);
        expect(got.every((x) => x === 1)).toBe(true);
      }
      // one file held by the model, a few free ones on each side: not one per request
      expect(prefixFiles(inst).length).toBeLessThanOrEqual(6);
    } finally {
      await inst.unload();
    }
    expect(prefixFiles(inst)).toEqual([]);
  });

  it('runs finalize on unload and its log line reaches the log', async () => {
    const cfg = config('add_sub', [io('add_sub_input0'), io('add_sub_input1')], [io('added_output'), io('subbed_output')]);
    const own: LogLine[] = [];
    const inst = await backend.loadInstance(loadContext(MODELS, cfg, own));
    await inst.unload();
    expect(own).toContainEqual({ level: 'info', message: expect.stringMatching(/model\.py:\d+\] add_sub: finalized$/) });
  });

});

describe('PythonBackend: the stub left by auto-complete', () => {
  it('becomes the first instance, which imports the model file only once', async () => {
    const b = new PythonBackend();
    const cfg = config('stub_reuse', [io('IN', 'TYPE_INT64', [1])], [io('OUT', 'TYPE_INT64', [2])]);
    const ctx = loadContext(FIXTURES, cfg);
    const completed = await b.autoComplete({ config: cfg, modelDir: ctx.modelDir, versionDir: ctx.versionDir, defaultMaxBatchSize: 4 });
    const autoCompletePid = completed.max_batch_size;
    const first = await b.loadInstance({ ...ctx, config: { ...cfg, max_batch_size: 0 } });
    const second = await b.loadInstance({ ...ctx, config: { ...cfg, max_batch_size: 0 } });
    try {
      const [a] = await run(first, [request('stub_reuse', [{ name: 'IN', datatype: 'INT64', shape: [1], data: new BigInt64Array([1n]) }])]);
      const [c] = await run(second, [request('stub_reuse', [{ name: 'IN', datatype: 'INT64', shape: [1], data: new BigInt64Array([1n]) }])]);
      expect(values(a.output('OUT'))).toEqual([autoCompletePid, 1]);
      const [secondPid, secondImports] = values(c.output('OUT'));
      expect(secondPid).not.toBe(autoCompletePid);
      expect(secondImports).toBe(1);
    } finally {
      await first.unload();
      await second.unload();
    }
  }, 30_000);

  it('keeps serving, state and process intact, past the time a spare nobody took would be finalized', async () => {
    const spareMs = 300;
    const b = new PythonBackend({ backendConfig: { 'nereid-spare-stub-timeout-ms': String(spareMs) } });
    const cfg = config('counter', [io('IN', 'TYPE_INT64', [1])], [io('OUT', 'TYPE_INT64', [2])]);
    const logs: LogLine[] = [];
    const ctx = loadContext(FIXTURES, cfg, logs);
    const parkedAt = Date.now();
    const completed = await b.autoComplete({ config: cfg, modelDir: ctx.modelDir, versionDir: ctx.versionDir, defaultMaxBatchSize: 4 });
    const autoCompletePid = Number(completed.parameters?.auto_complete_pid?.string_value);
    const inst = await b.loadInstance({ ...ctx, config: completed });
    const seen: [count: number, pid: number][] = [];
    try {
      // until well past the mark: the old release timer finalized the stub at spareMs
      while (Date.now() - parkedAt < 4 * spareMs || seen.length < 5) {
        const [s] = await run(inst, [request('counter', [{ name: 'IN', datatype: 'INT64', shape: [1], data: new BigInt64Array([1n]) }])]);
        expect(s.error).toBeUndefined();
        const [count, pid] = values(s.output('OUT'));
        seen.push([count, pid]);
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      await inst.unload();
    }
    expect(seen).toEqual(seen.map((_, i) => [i + 1, autoCompletePid]));
    expect(logs.filter((l) => /exited|killed|restarting/.test(l.message))).toEqual([]);
  }, 30_000);
});

describe('PythonBackend: a shim as the default interpreter', () => {
  it('runs the shim once to find the interpreter, then starts stubs with the interpreter itself', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'nereid-shim-'));
    const calls = path.join(dir, 'calls');
    const real = execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim();
    const shim = path.join(dir, 'python3');
    writeFileSync(shim, `#!/bin/sh\necho called >> "${calls}"\nexec "${real}" "$@"\n`, { mode: 0o755 });
    const b = new PythonBackend({ pythonExecutable: shim });
    const cfg = config('mul', [io('mul_input0'), io('mul_input1')], [io('mul_output')]);
    const a = await b.loadInstance(loadContext(MODELS, cfg));
    const c = await b.loadInstance(loadContext(MODELS, cfg));
    try {
      const [s] = await run(c, [request('mul', [f32('mul_input0', [1, 2, 3, 4]), f32('mul_input1', [2, 2, 2, 2])])]);
      expect(values(s.output('mul_output'))).toEqual([2, 4, 6, 8]);
      expect(readFileSync(calls, 'utf8').trim().split('\n')).toEqual(['called']);
    } finally {
      await a.unload();
      await c.unload();
    }
  }, 30_000);
});

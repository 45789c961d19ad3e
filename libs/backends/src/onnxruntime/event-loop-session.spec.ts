import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { REPO_ROOT } from './onnxruntime.testing';

/**
 * `session_thread: event_loop` runs onnxruntime-node on the calling thread. Under jest that cannot
 * work: the native binding builds output arrays in Node's main realm and onnxruntime-common rejects
 * them with `instanceof` checks in jest's sandbox realm. So this spec compiles the backend with SWC
 * (as `npm run build` does) and runs it in a plain Node child process, on the real simple model.
 */
describe('OnnxRuntimeBackend with session_thread event_loop (plain Node process)', () => {
  let out: string;
  beforeAll(() => {
    out = mkdtempSync(path.join(tmpdir(), 'nereid-ort-build-'));
    const swc = require.resolve('@swc/cli/bin/swc.js');
    const dirs = ['backends', 'protocol', 'tensor', 'model-config'].map((l) => `libs/${l}/src`);
    const r = spawnSync(process.execPath, [swc, ...dirs, '-d', out, '--config-file', '.swcrc', '--ignore', '**/*.spec.ts', '--quiet'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`swc failed: ${r.stderr}`);
  });
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('batches, answers and honours thread counts and graph level on the event loop', () => {
    const script = `
      const { OnnxRuntimeBackend } = require(${JSON.stringify(path.join(out, 'libs/backends/src/onnxruntime'))});
      const config = {
        name: 'simple', max_batch_size: 8, optimization: { graph: { level: 1 } },
        parameters: {
          session_thread: { string_value: 'event_loop' },
          intra_op_thread_count: { string_value: '1' }, inter_op_thread_count: { string_value: '1' },
        },
        input: [{ name: 'INPUT0', data_type: 'TYPE_INT32', dims: [16] }, { name: 'INPUT1', data_type: 'TYPE_INT32', dims: [16] }],
        output: [{ name: 'OUTPUT0', data_type: 'TYPE_INT32', dims: [16] }, { name: 'OUTPUT1', data_type: 'TYPE_INT32', dims: [16] }],
      };
      const dir = ${JSON.stringify(path.join(REPO_ROOT, 'models/simple'))};
      (async () => {
        const instance = await new OnnxRuntimeBackend().loadInstance({
          config, modelDir: dir, versionDir: dir + '/1', version: 1,
          instance: { name: 'simple_0', kind: 'KIND_CPU', deviceId: 0 }, log: () => {},
        });
        const results = [];
        const items = [1, 2].map((k) => ({
          request: { id: 'r' + k, modelName: 'simple', modelVersion: -1, parameters: {}, outputs: [{ name: 'OUTPUT1' }],
            inputs: [
              { name: 'INPUT0', datatype: 'INT32', shape: [k, 16], data: new Int32Array(16 * k).fill(10 * k) },
              { name: 'INPUT1', datatype: 'INT32', shape: [k, 16], data: new Int32Array(16 * k).fill(k) },
            ] },
          sink: {
            send: (r) => results.push({ id: r.id, version: r.modelVersion, outputs: r.outputs.map((o) => ({ name: o.name, shape: o.shape, data: Array.from(o.data) })) }),
            fail: (e) => results.push({ error: e.message }),
          },
        }));
        await instance.execute(items);
        const runs = instance.sessionRuns;
        await instance.unload();
        console.log(JSON.stringify({ runs, results }));
      })().catch((e) => { console.error(e); process.exit(1); });
    `;
    const r = spawnSync(process.execPath, ['-e', script], {
      encoding: 'utf8',
      env: { ...process.env, NODE_PATH: path.join(REPO_ROOT, 'node_modules') },
      timeout: 30000,
    });
    expect(r.stderr).toBe('');
    const { runs, results } = JSON.parse(r.stdout) as { runs: number; results: unknown[] };
    expect(runs).toBe(1);
    expect(results).toEqual([
      { id: 'r1', version: '1', outputs: [{ name: 'OUTPUT1', shape: [1, 16], data: Array(16).fill(9) }] },
      { id: 'r2', version: '1', outputs: [{ name: 'OUTPUT1', shape: [2, 16], data: Array(32).fill(18) }] },
    ]);
  });

  /** Runs several sessions' runs in one event-loop turn through InlineSessionRunner in a child process. */
  function runInline(env: Record<string, string>) {
    const script = `
      const ort = require('onnxruntime-node');
      const { InlineSessionRunner } = require(${JSON.stringify(path.join(out, 'libs/backends/src/onnxruntime/inline-session-runner'))});
      const model = ${JSON.stringify(path.join(REPO_ROOT, 'models/simple/1/model.onnx'))};
      (async () => {
        const options = { executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1 };
        const [r1, r2] = await Promise.all([InlineSessionRunner.open(model, options), InlineSessionRunner.open(model, options)]);
        const names = [r1.inputNames, r1.outputNames];
        const feeds = (k) => [
          { name: 'INPUT0', type: 'int32', dims: [1, 16], data: Int32Array.from({ length: 16 }, (_, i) => i * k) },
          { name: 'INPUT1', type: 'int32', dims: [1, 16], data: new Int32Array(16).fill(k) },
        ];
        // Asked for in the same turn: a good run, a failing one (an input missing), then good ones
        // on both sessions; the failure is the second run's alone.
        const settled = await Promise.allSettled([
          r1.run(feeds(1), ['OUTPUT1', 'OUTPUT0']),
          r1.run(feeds(2).slice(0, 1), ['OUTPUT0']),
          r2.run(feeds(3), ['OUTPUT0']),
          r1.run(feeds(4), ['OUTPUT1']),
        ]);
        const pub = await (await ort.InferenceSession.create(model, options)).run({
          INPUT0: new ort.Tensor('int32', feeds(1)[0].data, [1, 16]), INPUT1: new ort.Tensor('int32', feeds(1)[1].data, [1, 16]),
        });
        await Promise.all([r1.close(), r2.close()]);
        const closed = await r1.run(feeds(1), ['OUTPUT0']).then(() => 'none', (e) => e.message);
        console.log(JSON.stringify({
          direct: r1.direct, names, closed,
          results: settled.map((s) => s.status === 'fulfilled'
            ? s.value.map((o) => ({ name: o.name, type: o.type, dims: o.dims, data: Array.from(o.data) }))
            : { error: String(s.reason && s.reason.message) }),
          expected: ['OUTPUT1', 'OUTPUT0'].map((n) => Array.from(pub[n].data)),
        }));
      })().catch((e) => { console.error(e); process.exit(1); });
    `;
    const r = spawnSync(process.execPath, ['-e', script], {
      encoding: 'utf8',
      env: { ...process.env, NODE_PATH: path.join(REPO_ROOT, 'node_modules'), ...env },
      timeout: 30000,
    });
    // (onnxruntime logs the failed run on stderr itself.)
    expect(r.status).toBe(0);
    return JSON.parse(r.stdout) as {
      direct: boolean;
      names: string[][];
      closed: string;
      results: Array<Array<{ name: string; type: string; dims: number[]; data: number[] }> | { error: string }>;
      expected: number[][];
    };
  }

  const seq = (f: (i: number) => number) => Array.from({ length: 16 }, (_, i) => f(i));

  it.each([
    ['the native session, runs of one turn back to back', {}, true],
    ['the public API (NEREID_ORT_PUBLIC_API=1)', { NEREID_ORT_PUBLIC_API: '1' }, false],
  ])('runs CPU sessions on the event loop through %s, each run answered or failed on its own', (_label, env, direct) => {
    const got = runInline(env);
    expect(got.direct).toBe(direct);
    expect(got.names).toEqual([['INPUT0', 'INPUT1'], ['OUTPUT0', 'OUTPUT1']]);
    const [first, failed, other, last] = got.results;
    expect(first).toEqual([
      { name: 'OUTPUT1', type: 'int32', dims: [1, 16], data: seq((i) => i - 1) },
      { name: 'OUTPUT0', type: 'int32', dims: [1, 16], data: seq((i) => i + 1) },
    ]);
    expect((first as Array<{ data: number[] }>).map((o) => o.data)).toEqual(got.expected);
    expect(failed).toEqual({ error: expect.stringMatching(/INPUT1/) });
    expect(other).toEqual([{ name: 'OUTPUT0', type: 'int32', dims: [1, 16], data: seq((i) => 3 * i + 3) }]);
    expect(last).toEqual([{ name: 'OUTPUT1', type: 'int32', dims: [1, 16], data: seq((i) => 4 * i - 4) }]);
    expect(got.closed).toBe('the session is closed');
  });
});

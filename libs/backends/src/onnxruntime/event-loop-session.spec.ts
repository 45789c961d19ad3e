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
});

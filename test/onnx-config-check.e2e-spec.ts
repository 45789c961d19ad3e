/**
 * End-to-end: a config checked against its ONNX file when the model loads. A config that declares
 * TYPE_INT32 where the graph has FP32 leaves the model UNAVAILABLE, the repository index saying
 * which tensor, both types and the file (it used to load READY and fail every request); the
 * Triton-style sequence models, whose controls are graph inputs the config lists only as
 * sequence controls, load READY.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { getJson, makeRepository, postJson, ROOT, startTestServer } from './helpers/server';

const ONNX = path.join(ROOT, 'test/fixtures/onnx');

describe('ONNX config checked against the model at load', () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;

  beforeAll(async () => {
    const repo = makeRepository({
      int32_declared: path.join(ONNX, 'identity_fp32'),
      identity_fp32: path.join(ONNX, 'identity_fp32'),
      simple_sequence: path.join(ONNX, 'simple_sequence'),
      simple_dyna_sequence: path.join(ONNX, 'simple_dyna_sequence'),
    });
    const config = path.join(repo, 'int32_declared', 'config.pbtxt');
    const broken = readFileSync(config, 'utf8')
      .replace('name: "identity_fp32"', 'name: "int32_declared"')
      .replace(/name: "INPUT0"\n(\s*)data_type: TYPE_FP32/, 'name: "INPUT0"\n$1data_type: TYPE_INT32');
    expect(broken).toContain('TYPE_INT32');
    writeFileSync(config, broken);
    server = await startTestServer({ modelRepositories: [repo] });
  });
  afterAll(() => server?.close());

  it('shows the mismatched model UNAVAILABLE with the tensor, both types and the file, and the others READY', async () => {
    const index = await postJson(`${server.http}/v2/repository/index`, {});
    expect(index.status).toBe(200);
    const models = index.body as { name: string; state: string; reason: string }[];
    const byName = new Map(models.map((m) => [m.name, m]));
    expect(byName.get('int32_declared')).toMatchObject({
      state: 'UNAVAILABLE',
      reason: expect.stringContaining(
        "unable to load model 'int32_declared', configuration expects datatype TYPE_INT32 for input 'INPUT0', model provides TYPE_FP32 (ONNX file '1/model.onnx')",
      ),
    });
    for (const name of ['identity_fp32', 'simple_sequence', 'simple_dyna_sequence']) expect(byName.get(name)?.state).toBe('READY');
  });

  it('lists only the config inputs and outputs in the metadata of a sequence model (no controls), as Triton', async () => {
    const r = await getJson(`${server.http}/v2/models/simple_dyna_sequence`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [-1, 1] }],
      outputs: [{ name: 'OUTPUT', datatype: 'INT32', shape: [-1, 1] }],
    });
  });

  it('answers requests to the mismatched model as not ready instead of running them', async () => {
    const r = await postJson(`${server.http}/v2/models/int32_declared/infer`, {
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 2], data: [1, 2] }],
    });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(JSON.stringify(r.body)).not.toContain('OUTPUT0');
  });
});

/**
 * End-to-end: Triton-style python models (real stub processes) behind a real embedded Nereid,
 * driven over HTTP (JSON) and, for the decoupled model, over gRPC streaming.
 */
import * as path from 'node:path';
import { inferenceClient, type Msg } from './helpers/grpc-client';
import { getJson, makeRepository, postJson, ROOT, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const FIX = path.join(ROOT, 'test/fixtures/python');
const fp32 = (name: string, data: number[], shape = [data.length]) => ({ name, datatype: 'FP32', shape, data });
const outputOf = (body: Msg, name: string) => (body.outputs as Msg[]).find((o) => o.name === name)?.data as unknown[];

describe('python backend end to end', () => {
  let server: Server;
  beforeAll(async () => {
    const repo = makeRepository({
      add_sub: 'models/add_sub', mul: 'models/mul', string_upper: 'models/string_upper',
      add_sub_mul: path.join(FIX, 'add_sub_mul'), bls_sync: path.join(FIX, 'bls_sync'), bls_async: path.join(FIX, 'bls_async'),
      bls_decoupled: path.join(FIX, 'bls_decoupled'), decoupled_repeat: path.join(FIX, 'decoupled_repeat'),
      execute_raises: path.join(FIX, 'execute_raises'), error_response: path.join(FIX, 'error_response'), crash: path.join(FIX, 'crash'),
      auto_complete: path.join(FIX, 'auto_complete'),
    });
    server = await startTestServer({ modelRepositories: [repo] });
  }, 120_000);
  afterAll(() => server?.close());

  const infer = (model: string, body: unknown) => postJson(`${server.http}/v2/models/${model}/infer`, body);

  it('serves add_sub over HTTP JSON', async () => {
    const r = await infer('add_sub', { id: '1', inputs: [fp32('add_sub_input0', [1, 2, 3, 4]), fp32('add_sub_input1', [0.5, 0.5, 0.5, 0.5])] });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: '1', model_name: 'add_sub', model_version: '1' });
    expect(outputOf(r.body, 'added_output')).toEqual([1.5, 2.5, 3.5, 4.5]);
    expect(outputOf(r.body, 'subbed_output')).toEqual([0.5, 1.5, 2.5, 3.5]);
  });

  it('serves BYTES tensors (string_upper)', async () => {
    const r = await infer('string_upper', { inputs: [{ name: 'text_input', datatype: 'BYTES', shape: [1, 2], data: ['abc', 'Nereid'] }] });
    expect(r.status).toBe(200);
    expect(outputOf(r.body, 'text_output')).toEqual(['ABC', 'NEREID']);
  });

  it('runs the ensemble of add_sub and mul', async () => {
    const r = await infer('add_sub_mul', { inputs: [fp32('INPUT_A', [3, 4, 5, 6]), fp32('INPUT_B', [1, 2, 3, 4])] });
    expect(r.status).toBe(200);
    expect(outputOf(r.body, 'OUTPUT')).toEqual([8, 12, 16, 20]);
  });

  it('serves the config completed by auto_complete_config', async () => {
    const r = await getJson(`${server.http}/v2/models/auto_complete/config`);
    expect(r.body).toMatchObject({ max_batch_size: 4, input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [4] }, { name: 'INPUT1' }] });
  });

  it('calls other models through BLS (sync, async, decoupled)', async () => {
    const sync = await infer('bls_sync', {
      inputs: [{ name: 'MODEL_NAME', datatype: 'BYTES', shape: [1], data: ['add_sub'] }, fp32('INPUT0', [1, 1, 1, 1]), fp32('INPUT1', [2, 2, 2, 2])],
    });
    expect(outputOf(sync.body, 'OUTPUT0')).toEqual([3, 3, 3, 3]);
    const missing = await infer('bls_sync', {
      inputs: [{ name: 'MODEL_NAME', datatype: 'BYTES', shape: [1], data: ['undefined_model'] }, fp32('INPUT0', [1, 1, 1, 1]), fp32('INPUT1', [2, 2, 2, 2])],
    });
    expect(missing.status).toBe(500);
    expect(missing.body.error).toContain('undefined_model');
    const asyncR = await infer('bls_async', { inputs: [fp32('INPUT0', [1, 2, 3, 4]), fp32('INPUT1', [2, 2, 2, 2])] });
    expect(outputOf(asyncR.body, 'SUM')).toEqual([3, 4, 5, 6]);
    expect(outputOf(asyncR.body, 'PRODUCT')).toEqual([2, 4, 6, 8]);
    const dec = await infer('bls_decoupled', { inputs: [{ name: 'IN', datatype: 'INT32', shape: [3], data: [5, 6, 7] }] });
    expect(outputOf(dec.body, 'SUM')).toEqual([18]);
    expect(outputOf(dec.body, 'COUNT')).toEqual([3]);
  });

  it('maps python failures to Triton errors and keeps serving', async () => {
    const raised = await infer('execute_raises', { inputs: [fp32('INPUT0', [-1])] });
    expect(raised.status).toBe(500);
    expect(raised.body.error).toContain("Failed to process the request(s) for model 'execute_raises_0', message: ValueError: execute exploded on -1");
    const refused = await infer('error_response', { inputs: [fp32('INPUT0', [-1])] });
    expect(refused).toMatchObject({ status: 400, body: { error: 'input must not be negative' } });
    const dead = await infer('crash', { inputs: [{ name: 'MODE', datatype: 'INT32', shape: [1], data: [1] }] });
    expect(dead.status).toBe(500);
    expect(dead.body.error).toContain('killed by signal SIGKILL');
    const alive = await infer('crash', { inputs: [{ name: 'MODE', datatype: 'INT32', shape: [1], data: [0] }] });
    expect(alive.status).toBe(200);
  });

  it('streams the responses of a decoupled model over gRPC', async () => {
    const client = inferenceClient(server.grpcPort);
    const values: number[] = [];
    try {
      await new Promise<void>((resolve, reject) => {
        const stream = client.ModelStreamInfer();
        stream.on('data', (m: Msg) => {
          if (m.error_message) return reject(new Error(m.error_message));
          const raw: Buffer | undefined = m.infer_response.raw_output_contents?.[0];
          if (raw && raw.length === 4) values.push(raw.readInt32LE(0));
          if (values.length === 3) stream.end();
        });
        stream.on('end', resolve);
        stream.on('error', reject);
        const data = Buffer.alloc(12);
        [7, 8, 9].forEach((v, i) => data.writeInt32LE(v, i * 4));
        stream.write({ model_name: 'decoupled_repeat', id: 's1', inputs: [{ name: 'IN', datatype: 'INT32', shape: [3] }], raw_input_contents: [data] });
      });
    } finally {
      client.close();
    }
    expect(values).toEqual([7, 8, 9]);
  });
});

describe('python backend end to end: the stub left by auto-complete', () => {
  const spareMs = 1500;
  let server: Server;
  let startedAt = 0;
  beforeAll(async () => {
    const repo = makeRepository({ counter: path.join(FIX, 'counter') });
    startedAt = Date.now();
    server = await startTestServer({ modelRepositories: [repo], backendConfig: { python: { 'nereid-spare-stub-timeout-ms': String(spareMs) } } });
  }, 120_000);
  afterAll(() => server?.close());

  it('serves on, without a restart or a failed request, across the time a spare nobody took is finalized', async () => {
    const cfg = await getJson(`${server.http}/v2/models/counter/config`);
    const autoCompletePid = Number((cfg.body as Msg).parameters.auto_complete_pid.string_value);
    const seen: number[][] = [];
    const failures: unknown[] = [];
    // the spare was parked before the server was up; keep going well past its mark
    while (Date.now() - startedAt < 3 * spareMs || seen.length < 10) {
      const r = await postJson(`${server.http}/v2/models/counter/infer`, { inputs: [{ name: 'IN', datatype: 'INT64', shape: [1], data: [1] }] });
      if (r.status !== 200) failures.push(r.body);
      else seen.push(outputOf(r.body, 'OUT') as number[]);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(failures).toEqual([]);
    expect(seen).toEqual(seen.map((_, i) => [i + 1, autoCompletePid]));
  }, 60_000);
});

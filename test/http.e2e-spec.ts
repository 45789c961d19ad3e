import { copyFileSync, writeFileSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { getJson, makeRepository, postJson, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const in0 = Array.from({ length: 16 }, (_, i) => i);
const in1 = Array.from({ length: 16 }, () => 1);

function simpleRequest(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: in0 },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: in1 },
    ],
    ...extra,
  };
}

/** Body with a JSON header followed by binary tensors. */
function binaryBody(json: unknown, tensors: Uint8Array[]): { body: Buffer; headerLength: number } {
  const header = Buffer.from(JSON.stringify(json));
  return { body: Buffer.concat([header, ...tensors]), headerLength: header.length };
}

function int32Bytes(values: number[]): Uint8Array {
  return new Uint8Array(Int32Array.from(values).buffer);
}

describe('HTTP front door (embedded, simple + broken model)', () => {
  let server: Server;
  let repo: string;

  beforeAll(async () => {
    repo = makeRepository({ simple: 'models/simple' });
    mkdirSync(path.join(repo, 'broken', '1'), { recursive: true });
    copyFileSync(path.join(repo, 'simple', '1', 'model.onnx'), path.join(repo, 'broken', '1', 'model.onnx'));
    writeFileSync(path.join(repo, 'broken', 'config.pbtxt'), 'name: "broken"\nplatform: "onnxruntime_onnx"\nmax_batch_size: -1\n');
    server = await startTestServer({ modelRepositories: [repo], httpMaxInputSize: 1024 * 1024 });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('answers health like Triton (strict readiness: a broken model makes the server not ready)', async () => {
    expect((await fetch(`${server.http}/v2/health/live`)).status).toBe(200);
    const ready = await fetch(`${server.http}/v2/health/ready`);
    expect(ready.status).toBe(400);
    expect(await ready.text()).toBe('');
    expect((await fetch(`${server.http}/v2/models/simple/ready`)).status).toBe(200);
    expect((await fetch(`${server.http}/v2/models/simple/versions/1/ready`)).status).toBe(200);
    const notReady = await getJson(`${server.http}/v2/models/broken/ready`);
    expect(notReady).toEqual({ status: 400, body: { error: 'Model version not ready' } });
  });

  it('serves server metadata', async () => {
    const { status, body } = await getJson(`${server.http}/v2`);
    expect(status).toBe(200);
    expect(body).toMatchObject({ name: 'triton', extensions: expect.arrayContaining(['binary_tensor_data', 'model_repository']) });
  });

  it('serves model metadata and the completed config', async () => {
    const md = await getJson(`${server.http}/v2/models/simple`);
    expect(md.body).toEqual({
      name: 'simple',
      versions: ['1'],
      platform: 'onnxruntime_onnx',
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [-1, 16] },
        { name: 'INPUT1', datatype: 'INT32', shape: [-1, 16] },
      ],
      outputs: [
        { name: 'OUTPUT0', datatype: 'INT32', shape: [-1, 16] },
        { name: 'OUTPUT1', datatype: 'INT32', shape: [-1, 16] },
      ],
    });
    const cfg = await getJson(`${server.http}/v2/models/simple/config`);
    expect(cfg.status).toBe(200);
    expect(cfg.body).toMatchObject({
      name: 'simple',
      platform: 'onnxruntime_onnx',
      backend: 'onnxruntime',
      max_batch_size: 8,
      version_policy: { latest: { num_versions: 1 } },
      input: [expect.objectContaining({ name: 'INPUT0', data_type: 'TYPE_INT32', dims: [16] }), expect.anything()],
      instance_group: [expect.objectContaining({ kind: 'KIND_CPU' })],
    });
  });

  it('infers with JSON tensors and echoes the id', async () => {
    const r = await postJson(`${server.http}/v2/models/simple/infer`, simpleRequest({ id: 'abc' }));
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('application/json');
    expect(r.body.id).toBe('abc');
    expect(r.body.model_name).toBe('simple');
    expect(r.body.model_version).toBe('1');
    const out = Object.fromEntries(r.body.outputs.map((o: { name: string; data: number[] }) => [o.name, o]));
    expect(out.OUTPUT0).toMatchObject({ datatype: 'INT32', shape: [1, 16], data: in0.map((v) => v + 1) });
    expect(out.OUTPUT1.data).toEqual(in0.map((v) => v - 1));
  });

  it('accepts nested JSON data and a requested subset of outputs', async () => {
    const req = simpleRequest({ outputs: [{ name: 'OUTPUT1' }] });
    (req.inputs as { data: unknown }[])[0].data = [in0];
    const r = await postJson(`${server.http}/v2/models/simple/versions/1/infer`, req);
    expect(r.status).toBe(200);
    expect(r.body.outputs.map((o: { name: string }) => o.name)).toEqual(['OUTPUT1']);
  });

  it('infers with binary tensors in and out', async () => {
    const json = {
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } },
        { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } },
      ],
      outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }, { name: 'OUTPUT1', parameters: { binary_data: false } }],
    };
    const { body, headerLength } = binaryBody(json, [int32Bytes(in0), int32Bytes(in1)]);
    const r = await fetch(`${server.http}/v2/models/simple/infer`, {
      method: 'POST',
      headers: { 'Inference-Header-Content-Length': String(headerLength), 'content-type': 'application/octet-stream' },
      body,
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/octet-stream');
    const hl = Number(r.headers.get('inference-header-content-length'));
    const buf = Buffer.from(await r.arrayBuffer());
    const header = JSON.parse(buf.subarray(0, hl).toString());
    expect(header.outputs[0]).toMatchObject({ name: 'OUTPUT0', parameters: { binary_data_size: 64 } });
    expect(header.outputs[0].data).toBeUndefined();
    expect(header.outputs[1].data).toEqual(in0.map((v) => v - 1));
    const sums = new Int32Array(buf.buffer.slice(buf.byteOffset + hl, buf.byteOffset + hl + 64));
    expect(Array.from(sums)).toEqual(in0.map((v) => v + 1));
  });

  it('answers binary_data_output for every output', async () => {
    const r = await fetch(`${server.http}/v2/models/simple/infer`, {
      method: 'POST',
      body: JSON.stringify(simpleRequest({ parameters: { binary_data_output: true } })),
    });
    expect(r.status).toBe(200);
    const hl = Number(r.headers.get('inference-header-content-length'));
    const buf = Buffer.from(await r.arrayBuffer());
    expect(buf.length).toBe(hl + 128);
  });

  const bad: [string, (h: string) => Promise<{ status: number; body: any }>, number, RegExp][] = [
    ['malformed JSON', (h) => postJson(`${h}/v2/models/simple/infer`, '{"inputs": ['), 400, /failed to parse/],
    ['unknown model', (h) => postJson(`${h}/v2/models/nope/infer`, simpleRequest()), 400, /Request for unknown model: 'nope' is not found/],
    ['unknown version', (h) => postJson(`${h}/v2/models/simple/versions/7/infer`, simpleRequest()), 404, /version 7 is not found/],
    [
      'missing input',
      (h) => postJson(`${h}/v2/models/simple/infer`, { inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: in0 }] }),
      400,
      /missing required input\(s\) \['INPUT1'\]/,
    ],
    [
      'unknown input',
      (h) => {
        const r = simpleRequest();
        (r.inputs as { name: string }[])[1].name = 'INPUT9';
        return postJson(`${h}/v2/models/simple/infer`, r);
      },
      400,
      /^unexpected inference input 'INPUT9' for model 'simple'$/,
    ],
    [
      'duplicate input',
      (h) => {
        const r = simpleRequest();
        (r.inputs as unknown[]).push({ name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: in0 });
        return postJson(`${h}/v2/models/simple/infer`, r);
      },
      400,
      /input 'INPUT0' already exists/,
    ],
    [
      'wrong datatype',
      (h) => {
        const r = simpleRequest();
        (r.inputs as { datatype: string }[])[1].datatype = 'FP32';
        return postJson(`${h}/v2/models/simple/infer`, r);
      },
      400,
      /inference input 'INPUT1' data-type is 'FP32', but model 'simple' expects 'INT32'/,
    ],
    [
      'shape not matching data',
      (h) => {
        const r = simpleRequest();
        (r.inputs as { shape: number[] }[])[0].shape = [1, 15];
        return postJson(`${h}/v2/models/simple/infer`, r);
      },
      400,
      /INPUT0/,
    ],
    [
      'shape not matching the model',
      (h) => {
        const r = simpleRequest();
        for (const i of r.inputs as { shape: number[]; data: number[] }[]) {
          i.shape = [2, 8];
        }
        return postJson(`${h}/v2/models/simple/infer`, r);
      },
      400,
      /unexpected shape for input 'INPUT0' for model 'simple'. Expected \[-1,16\], got \[2,8\]/,
    ],
    [
      'batch larger than max_batch_size',
      (h) =>
        postJson(`${h}/v2/models/simple/infer`, {
          inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, shape: [9, 16], datatype: 'INT32', data: new Array(144).fill(1) })),
        }),
      400,
      /batch-size must be <= 8 for 'simple'/,
    ],
    [
      'binary header length beyond the body',
      (h) => postJson(`${h}/v2/models/simple/infer`, JSON.stringify(simpleRequest()), { 'Inference-Header-Content-Length': '99999' }),
      400,
      /^inference header size should be in range \(0, [0-9]+\), got: 99999$/,
    ],
    [
      'binary size beyond the body',
      (h) => {
        const { body, headerLength } = binaryBody(
          {
            inputs: [
              { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } },
              { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 640 } },
            ],
          },
          [int32Bytes(in0), int32Bytes(in1)],
        );
        return postJson(`${h}/v2/models/simple/infer`, body, { 'Inference-Header-Content-Length': String(headerLength) });
      },
      400,
      /^unexpected size for input 'INPUT1', expecting 576 additional bytes for model 'simple'$/,
    ],
    [
      'body over the limit',
      (h) => postJson(`${h}/v2/models/simple/infer`, 'x'.repeat(2 * 1024 * 1024)),
      400,
      /^request JSON size of 2097152 bytes exceeds the maximum allowed input size of 1048576 bytes\. Use --http-max-input-size to increase the limit\.$/,
    ],
    [
      'raw body over the limit',
      (h) => postJson(`${h}/v2/models/simple/infer`, 'x'.repeat(2 * 1024 * 1024), { 'Inference-Header-Content-Length': '0' }),
      400,
      /^Raw input has a byte_size \(2097152 bytes\) that exceeds the maximum allowed value of 1048576 bytes\. Use --http-max-input-size to increase the limit\.$/,
    ],
    ['reserved parameter', (h) => postJson(`${h}/v2/models/simple/infer`, simpleRequest({ parameters: { triton_x: 1 } })), 400, /reserved for Triton/],
    ['model not ready', (h) => postJson(`${h}/v2/models/broken/infer`, simpleRequest()), 404, /has no available versions/],
  ];

  it.each(bad)('rejects %s with Triton error JSON and keeps serving', async (_name, call, status, message) => {
    const r = await call(server.http);
    expect(r.status).toBe(status);
    expect(r.body).toEqual({ error: expect.stringMatching(message) });
    const ok = await postJson(`${server.http}/v2/models/simple/infer`, simpleRequest());
    expect(ok.status).toBe(200);
  });

  it('answers 404 and 405 like Triton', async () => {
    expect(await getJson(`${server.http}/v2/nothing/here`)).toEqual({ status: 404, body: { error: 'Not Found' } });
    expect(await getJson(`${server.http}/v2/models/simple/infer`)).toEqual({ status: 405, body: { error: 'Method Not Allowed' } });
  });

  it('lists the repository with states and reasons', async () => {
    const r = await postJson(`${server.http}/v2/repository/index`, {});
    expect(r.status).toBe(200);
    expect(r.body).toEqual(
      expect.arrayContaining([
        { name: 'simple', version: '1', state: 'READY' },
        expect.objectContaining({ name: 'broken', state: 'UNAVAILABLE', reason: expect.stringMatching(/max_batch_size/) }),
      ]),
    );
    const ready = await postJson(`${server.http}/v2/repository/index`, { ready: true });
    expect(ready.body).toEqual([{ name: 'simple', version: '1', state: 'READY' }]);
    const badReady = await postJson(`${server.http}/v2/repository/index`, { ready: 'yes' });
    expect(badReady).toMatchObject({ status: 400, body: { error: "Invalid value for 'ready': expected a boolean" } });
  });

  it('refuses load/unload outside explicit mode', async () => {
    const r = await postJson(`${server.http}/v2/repository/models/simple/load`);
    expect(r).toMatchObject({ status: 503, body: { error: 'explicit model load / unload is not allowed if polling is enabled' } });
  });

  it('reports statistics and Prometheus metrics', async () => {
    const stats = await getJson(`${server.http}/v2/models/simple/stats`);
    expect(stats.status).toBe(200);
    const s = (stats.body as { model_stats: any[] }).model_stats[0];
    expect(s).toMatchObject({ name: 'simple', version: '1' });
    expect(s.inference_count).toBeGreaterThan(0);
    expect(s.inference_stats.success.count).toBeGreaterThan(0);
    const metrics = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/nv_inference_count\{model="simple",version="1"\} \d+/);
    expect(metrics).toMatch(/nv_inference_request_success\{model="simple",version="1"\} \d+/);
  });

  it('serves logging and trace settings', async () => {
    const log = await getJson(`${server.http}/v2/logging`);
    expect(log.body).toMatchObject({ log_info: expect.any(Boolean), log_verbose_level: 0, log_format: 'default' });
    const upd = await postJson(`${server.http}/v2/logging`, { log_verbose_level: 1 });
    expect(upd.body.log_verbose_level).toBe(1);
    const file = await postJson(`${server.http}/v2/logging`, { log_file: '/tmp/x' });
    expect(file.status).toBe(501);
    const trace = await postJson(`${server.http}/v2/models/simple/trace/setting`, { trace_rate: '5' });
    expect(trace.body).toMatchObject({ trace_rate: '5', trace_level: ['OFF'] });
    const global = await getJson(`${server.http}/v2/trace/setting`);
    expect(global.body).toMatchObject({ trace_rate: '1000' });
  });
});

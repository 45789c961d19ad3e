/**
 * End-to-end: a real Nereid (embedded mode, real onnxruntime sessions) and a plain @grpc/grpc-js
 * client that loads Triton's .proto files dynamically, as any generated client would.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { startGrpcServer } from '../apps/gateway/src/grpc';
import type { RunningNereid } from '../apps/nereid/src/serve';
import { call, callError, healthClient, inferenceClient, openInferStream, type Client, type Msg } from './helpers/grpc-client';
import { makeRepository, ROOT, startTestServer } from './helpers/server';

const PROTO_DIR = path.join(ROOT, 'proto');

function int32Bytes(values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeInt32LE(v, i * 4));
  return b;
}

function readInt32(b: Buffer): number[] {
  const out: number[] = [];
  for (let i = 0; i < b.length; i += 4) out.push(b.readInt32LE(i));
  return out;
}

function readBytesElements(b: Buffer): string[] {
  const out: string[] = [];
  for (let o = 0; o < b.length; ) {
    const n = b.readUInt32LE(o);
    out.push(b.subarray(o + 4, o + 4 + n).toString());
    o += 4 + n;
  }
  return out;
}

const range = (n: number, f: (i: number) => number): number[] => Array.from({ length: n }, (_, i) => f(i));

function simpleTensors(): Msg[] {
  return [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
  ];
}

/** A `simple` request: INPUT0 = base + i, INPUT1 = i. */
function simpleRequest(id: string, base: number): Msg {
  return {
    model_name: 'simple',
    id,
    inputs: simpleTensors(),
    raw_input_contents: [int32Bytes(range(16, (i) => base + i)), int32Bytes(range(16, (i) => i))],
  };
}

function expectSimpleAnswer(res: Msg, base: number): void {
  expect(res.model_name).toBe('simple');
  expect(res.model_version).toBe('1');
  expect(res.outputs.map((o: Msg) => [o.name, o.datatype, o.shape])).toEqual([
    ['OUTPUT0', 'INT32', ['1', '16']],
    ['OUTPUT1', 'INT32', ['1', '16']],
  ]);
  expect(readInt32(res.raw_output_contents[0])).toEqual(range(16, (i) => base + 2 * i));
  expect(readInt32(res.raw_output_contents[1])).toEqual(range(16, () => base));
}

let nereid: RunningNereid;
let client: Client;
let repo: string;

beforeAll(async () => {
  repo = makeRepository({
    simple: 'models/simple',
    identity_bytes: 'test/fixtures/onnx/identity_bytes',
    identity_fp32: 'test/fixtures/onnx/identity_fp32',
    decoupled_repeat: 'test/fixtures/python/decoupled_repeat',
  });
  nereid = await startTestServer({
    modelRepositories: [repo],
    modelControlMode: 'explicit',
    loadModels: ['simple', 'identity_bytes', 'decoupled_repeat'],
  });
  client = inferenceClient(nereid.grpcPort);
});

afterAll(async () => {
  client?.close();
  await nereid?.close();
  if (repo) fs.rmSync(repo, { recursive: true, force: true });
});

describe('health and metadata', () => {
  it('ServerLive / ServerReady', async () => {
    expect(await call(client, 'ServerLive', {})).toEqual({ live: true });
    expect(await call(client, 'ServerReady', {})).toEqual({ ready: true });
  });

  it('ModelReady: ready, and an error status for an unknown model', async () => {
    expect(await call(client, 'ModelReady', { name: 'simple', version: '' })).toEqual({ ready: true });
    expect(await call(client, 'ModelReady', { name: 'simple', version: '1' })).toEqual({ ready: true });
    const err = await callError(client, 'ModelReady', { name: 'nope' });
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toBe("Request for unknown model: 'nope' is not found");
  });

  it('ServerMetadata', async () => {
    const res = await call(client, 'ServerMetadata', {});
    expect(res.name).toBe('triton');
    expect(res.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(res.extensions).toEqual(expect.arrayContaining(['classification', 'model_repository', 'statistics']));
  });

  it('ModelMetadata', async () => {
    const res = await call(client, 'ModelMetadata', { name: 'simple', version: '' });
    expect(res).toEqual({
      name: 'simple',
      versions: ['1'],
      platform: 'onnxruntime_onnx',
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: ['-1', '16'] },
        { name: 'INPUT1', datatype: 'INT32', shape: ['-1', '16'] },
      ],
      outputs: [
        { name: 'OUTPUT0', datatype: 'INT32', shape: ['-1', '16'] },
        { name: 'OUTPUT1', datatype: 'INT32', shape: ['-1', '16'] },
      ],
    });
  });

  it('ModelMetadata errors: absent version, bad version string', async () => {
    const absent = await callError(client, 'ModelMetadata', { name: 'simple', version: '7' });
    expect(absent.code).toBe(grpc.status.NOT_FOUND);
    expect(absent.details).toBe("Request for unknown model: 'simple' version 7 is not found");
    const bad = await callError(client, 'ModelMetadata', { name: 'simple', version: 'abc' });
    expect(bad.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(bad.details).toContain("failed to get model version from specified version string 'abc'");
  });

  it('ModelConfig returns the normalized config message', async () => {
    const { config } = await call(client, 'ModelConfig', { name: 'simple', version: '' });
    expect(config).toMatchObject({ name: 'simple', platform: 'onnxruntime_onnx', max_batch_size: 8 });
    expect(config.input.map((i: Msg) => [i.name, i.data_type, i.dims])).toEqual([
      ['INPUT0', 'TYPE_INT32', ['16']],
      ['INPUT1', 'TYPE_INT32', ['16']],
    ]);
    expect(config.instance_group[0].kind).toBe('KIND_CPU');
  });

  it('grpc.health.v1.Health Check and Watch', async () => {
    const health = healthClient(nereid.grpcPort);
    const res = await call(health, 'Check', { service: '' });
    expect(res).toEqual({ status: 'SERVING' });
    const first = await new Promise<Msg>((resolve, reject) => {
      const stream = health.Watch({ service: '' });
      stream.on('data', (m: Msg) => {
        resolve(m);
        stream.cancel();
      });
      stream.on('error', (e: grpc.ServiceError) => (e.code === grpc.status.CANCELLED ? undefined : reject(e)));
    });
    expect(first).toEqual({ status: 'SERVING' });
    health.close();
  });
});

describe('ModelInfer', () => {
  it('answers with raw_output_contents in output order', async () => {
    const res = await call(client, 'ModelInfer', simpleRequest('one', 100));
    expect(res.id).toBe('one');
    expectSimpleAnswer(res, 100);
  });

  it('accepts typed contents and returns only the requested outputs', async () => {
    const inputs = simpleTensors();
    inputs[0].contents = { int_contents: range(16, (i) => 10 * i) };
    inputs[1].contents = { int_contents: range(16, () => 3) };
    const res = await call(client, 'ModelInfer', {
      model_name: 'simple',
      model_version: '1',
      inputs,
      outputs: [{ name: 'OUTPUT1' }],
    });
    expect(res.outputs.map((o: Msg) => o.name)).toEqual(['OUTPUT1']);
    expect(res.raw_output_contents).toHaveLength(1);
    expect(readInt32(res.raw_output_contents[0])).toEqual(range(16, (i) => 10 * i - 3));
  });

  it('classification via the int64_param output parameter', async () => {
    const req = simpleRequest('cls', 0);
    req.outputs = [{ name: 'OUTPUT0', parameters: { classification: { int64_param: 2 } } }];
    const res = await call(client, 'ModelInfer', req);
    expect(res.outputs[0]).toMatchObject({ name: 'OUTPUT0', datatype: 'BYTES', shape: ['1', '2'] });
    expect(readBytesElements(res.raw_output_contents[0])).toEqual(['30:15', '28:14']);
  });

  it('BYTES tensors travel with 4-byte length prefixes, raw or typed', async () => {
    const words = ['hello', '', 'nereid'];
    const raw = Buffer.concat(words.flatMap((w) => [int32Bytes([Buffer.byteLength(w)]), Buffer.from(w)]));
    const tensor = { name: 'INPUT0', datatype: 'BYTES', shape: [1, 3] };
    const fromRaw = await call(client, 'ModelInfer', {
      model_name: 'identity_bytes',
      inputs: [tensor],
      raw_input_contents: [raw],
    });
    expect(fromRaw.outputs[0]).toMatchObject({ datatype: 'BYTES', shape: ['1', '3'] });
    expect(readBytesElements(fromRaw.raw_output_contents[0])).toEqual(words);
    const fromTyped = await call(client, 'ModelInfer', {
      model_name: 'identity_bytes',
      inputs: [{ ...tensor, contents: { bytes_contents: words.map((w) => Buffer.from(w)) } }],
    });
    expect(readBytesElements(fromTyped.raw_output_contents[0])).toEqual(words);
  });

  it('carries messages larger than grpc-js default 4 MiB (default limit is INT32_MAX)', async () => {
    await call(client, 'RepositoryModelLoad', { model_name: 'identity_fp32' });
    const n = 2 * 1024 * 1024; // 8 MiB of FP32
    const data = Buffer.alloc(n * 4);
    data.writeFloatLE(1.5, 0);
    data.writeFloatLE(-2.25, (n - 1) * 4);
    const res = await call(client, 'ModelInfer', {
      model_name: 'identity_fp32',
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, n] }],
      raw_input_contents: [data],
    });
    expect(res.raw_output_contents[0].length).toBe(n * 4);
    expect(res.raw_output_contents[0].readFloatLE(0)).toBe(1.5);
    expect(res.raw_output_contents[0].readFloatLE((n - 1) * 4)).toBe(-2.25);
  });

  describe('bad requests', () => {
    const expectInvalid = async (req: Msg, message?: string | RegExp): Promise<void> => {
      const err = await callError(client, 'ModelInfer', req);
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      if (typeof message === 'string') expect(err.details).toBe(message);
      else if (message) expect(err.details).toMatch(message);
    };

    it('unknown model', async () => {
      await expectInvalid({ ...simpleRequest('u', 0), model_name: 'nope' }, "Request for unknown model: 'nope' is not found");
    });

    it('wrong number of inputs', async () => {
      const req = simpleRequest('one-input', 0);
      req.inputs = req.inputs.slice(0, 1);
      req.raw_input_contents = req.raw_input_contents.slice(0, 1);
      await expectInvalid(req, /simple/);
    });

    it('raw contents count differs from the inputs', async () => {
      const req = simpleRequest('count', 0);
      req.raw_input_contents = req.raw_input_contents.slice(0, 1);
      await expectInvalid(req, "unable to find data for input tensor 'INPUT1' for model 'simple' in request.");
    });

    it('raw contents size mismatch', async () => {
      const req = simpleRequest('size', 0);
      req.raw_input_contents[0] = req.raw_input_contents[0].subarray(0, 60);
      await expectInvalid(req, "input byte size mismatch for input 'INPUT0' for model 'simple'. Expected 64, got 60");
    });

    it('typed contents of the wrong type', async () => {
      const inputs = simpleTensors();
      inputs[0].contents = { fp32_contents: range(16, (i) => i) };
      inputs[1].contents = { int_contents: range(16, (i) => i) };
      await expectInvalid({ model_name: 'simple', inputs }, /INPUT0/);
    });

    it('raw and typed contents together', async () => {
      const req = simpleRequest('both', 0);
      req.inputs[1].contents = { int_contents: range(16, (i) => i) };
      await expectInvalid(
        req,
        "contents field must not be specified when using raw_input_contents for 'INPUT1' for model 'simple'",
      );
    });

    it('wrong datatype and wrong parameter type', async () => {
      const req = simpleRequest('dt', 0);
      req.inputs[0].datatype = 'FP32';
      await expectInvalid(req, /data-type is 'FP32', but model 'simple' expects 'INT32'/);
      const p = simpleRequest('param', 0);
      p.parameters = { sequence_start: { int64_param: 1 } };
      await expectInvalid(p, "invalid value type for 'sequence_start' parameter, expected bool_param.");
    });

    it('oversized message → RESOURCE_EXHAUSTED', async () => {
      const small = await startGrpcServer(nereid.core, { host: '127.0.0.1', port: 0, maxMessageSize: 1024 });
      const c = inferenceClient(small.port);
      try {
        const ok = await call(c, 'ModelInfer', simpleRequest('fits', 1));
        expectSimpleAnswer(ok, 1);
        const req = simpleRequest('big', 0);
        req.parameters = { padding: { string_param: 'x'.repeat(4096) } };
        const err = await callError(c, 'ModelInfer', req);
        expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      } finally {
        c.close();
        await small.close();
      }
    });
  });
});

describe('ModelStreamInfer', () => {
  it('runs 50 interleaved requests and answers each, matched by id', async () => {
    const stream = client.ModelStreamInfer();
    const answers = new Map<string, Msg>();
    const done = new Promise<void>((resolve, reject) => {
      stream.on('data', (m: Msg) => answers.set(m.infer_response.id, m));
      stream.on('end', resolve);
      stream.on('error', reject);
    });
    for (let k = 0; k < 50; k++) stream.write(simpleRequest(`req-${k}`, k * 1000));
    stream.end();
    await done;
    expect(answers.size).toBe(50);
    for (let k = 0; k < 50; k++) {
      const m = answers.get(`req-${k}`)!;
      expect(m.error_message).toBe('');
      expect(m.infer_response.parameters.triton_final_response).toMatchObject({ bool_param: true });
      expectSimpleAnswer(m.infer_response, k * 1000);
    }
  });

  it('reports errors in error_message and keeps the stream open', async () => {
    const { stream, messages, done } = openInferStream(client);
    stream.write(simpleRequest('a', 1));
    stream.write({ ...simpleRequest('bad-model', 0), model_name: 'nope' });
    const sizeMismatch = simpleRequest('bad-size', 0);
    sizeMismatch.raw_input_contents[1] = Buffer.alloc(3);
    stream.write(sizeMismatch);
    stream.write(simpleRequest('b', 2));
    stream.end();
    await done;
    const byId = new Map(messages.map((m) => [m.infer_response?.id, m]));
    expect(messages).toHaveLength(4);
    expect(byId.get('bad-model')!.error_message).toBe("Request for unknown model: 'nope' is not found");
    expect(byId.get('bad-size')!.error_message).toBe(
      "input byte size mismatch for input 'INPUT1' for model 'simple'. Expected 64, got 3",
    );
    expectSimpleAnswer(byId.get('a')!.infer_response, 1);
    expectSimpleAnswer(byId.get('b')!.infer_response, 2);
  });

  it('streams several responses per request from a decoupled model, each carrying its id', async () => {
    const repeat = (id: string, values: number[], emptyFinal: boolean): Msg => ({
      model_name: 'decoupled_repeat',
      id,
      parameters: emptyFinal ? { triton_enable_empty_final_response: { bool_param: true } } : {},
      inputs: [{ name: 'IN', datatype: 'INT32', shape: [values.length] }],
      raw_input_contents: [int32Bytes(values)],
    });
    const { stream, messages, done } = openInferStream(client);
    stream.write(repeat('d1', [5, 6, 7], true));
    stream.write(repeat('d2', [1, 2], false));
    stream.end();
    await done;
    expect(messages.every((m) => m.error_message === '')).toBe(true);
    const of = (id: string) => messages.filter((m) => m.infer_response.id === id).map((m) => m.infer_response);
    const d1 = of('d1');
    expect(d1).toHaveLength(4);
    expect(d1.slice(0, 3).map((r: Msg) => readInt32(r.raw_output_contents[0])[0])).toEqual([5, 6, 7]);
    expect(d1.slice(0, 3).every((r: Msg) => r.parameters.triton_final_response.bool_param === false)).toBe(true);
    expect(d1[3]).toMatchObject({ model_name: 'decoupled_repeat', outputs: [], raw_output_contents: [] });
    expect(d1[3].parameters.triton_final_response.bool_param).toBe(true);
    const d2 = of('d2');
    expect(d2.map((r: Msg) => readInt32(r.raw_output_contents[0])[0])).toEqual([1, 2]);
  });

  it('unary ModelInfer rejects a decoupled model', async () => {
    const err = await callError(client, 'ModelInfer', {
      model_name: 'decoupled_repeat',
      inputs: [{ name: 'IN', datatype: 'INT32', shape: [1] }],
      raw_input_contents: [int32Bytes([1])],
    });
    expect(err.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(err.details).toBe("ModelInfer RPC doesn't support models with decoupled transaction policy");
  });

  it("ends the stream with the error's status in triton_grpc_error mode", async () => {
    const md = new grpc.Metadata();
    md.set('triton_grpc_error', 'true');
    const stream = client.ModelStreamInfer(md);
    const err = await new Promise<grpc.ServiceError>((resolve, reject) => {
      stream.on('data', () => undefined);
      stream.on('error', resolve);
      stream.on('end', () => reject(new Error('stream ended without an error')));
      stream.write({ ...simpleRequest('x', 0), model_name: 'nope' });
    });
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toBe("Request for unknown model: 'nope' is not found");
  });

  it('a client cancelling a stream leaves the server serving', async () => {
    const stream = client.ModelStreamInfer();
    const err = await new Promise<grpc.ServiceError>((resolve) => {
      stream.on('data', () => undefined);
      stream.on('error', resolve);
      for (let k = 0; k < 20; k++) stream.write(simpleRequest(`c-${k}`, k));
      setImmediate(() => stream.cancel());
    });
    expect(err.code).toBe(grpc.status.CANCELLED);
    expectSimpleAnswer(await call(client, 'ModelInfer', simpleRequest('after-cancel', 5)), 5);
  });

  it('cancelling mid-way through a decoupled request stops the stream', async () => {
    const stream = client.ModelStreamInfer();
    let received = 0;
    const err = await new Promise<grpc.ServiceError>((resolve) => {
      stream.on('data', () => {
        if (++received === 1) stream.cancel();
      });
      stream.on('error', resolve);
      stream.write({
        model_name: 'decoupled_repeat',
        id: 'long',
        inputs: [{ name: 'IN', datatype: 'INT32', shape: [200] }],
        raw_input_contents: [int32Bytes(range(200, (i) => i))],
      });
    });
    expect(err.code).toBe(grpc.status.CANCELLED);
    expect(received).toBeLessThan(200);
    expectSimpleAnswer(await call(client, 'ModelInfer', simpleRequest('after-cancel-2', 6)), 6);
  });
});

describe('statistics, repository, settings, shared memory', () => {
  it('ModelStatistics counts the inferences', async () => {
    const res = await call(client, 'ModelStatistics', { name: 'simple', version: '' });
    expect(res.model_stats).toHaveLength(1);
    const s = res.model_stats[0];
    expect(s).toMatchObject({ name: 'simple', version: '1' });
    expect(Number(s.inference_count)).toBeGreaterThan(50);
    expect(Number(s.inference_stats.success.count)).toBeGreaterThan(50);
    const all = await call(client, 'ModelStatistics', { name: '', version: '' });
    expect(all.model_stats.map((m: Msg) => m.name)).toEqual(expect.arrayContaining(['simple', 'identity_bytes']));
  });

  it('RepositoryIndex, RepositoryModelLoad, RepositoryModelUnload', async () => {
    await call(client, 'RepositoryModelLoad', { model_name: 'identity_fp32' });
    const index = await call(client, 'RepositoryIndex', { ready: true });
    expect(index.models).toEqual(
      expect.arrayContaining([{ name: 'identity_fp32', version: '1', state: 'READY', reason: '' }]),
    );
    await call(client, 'RepositoryModelUnload', {
      model_name: 'identity_fp32',
      parameters: { unload_dependents: { bool_param: false } },
    });
    const after = await call(client, 'RepositoryIndex', { ready: false });
    const row = after.models.find((m: Msg) => m.name === 'identity_fp32');
    expect(row).toMatchObject({ state: 'UNAVAILABLE', reason: 'unloaded' });
    const ready = await call(client, 'ModelReady', { name: 'identity_fp32' }).catch(() => ({ ready: false }));
    expect(ready.ready).toBe(false);

    const named = await callError(client, 'RepositoryIndex', { repository_name: 'r' });
    expect(named.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(named.details).toBe("'repository_name' specification is not supported");
    const badParam = await callError(client, 'RepositoryModelLoad', {
      model_name: 'identity_fp32',
      parameters: { config: { bool_param: true } },
    });
    expect(badParam.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(badParam.details).toBe("invalid value type for load parameter 'config', expected string_param.");
  });

  it('RepositoryModelLoad with a config override', async () => {
    const config = JSON.stringify({ backend: 'onnxruntime', max_batch_size: 4 });
    await call(client, 'RepositoryModelLoad', {
      model_name: 'identity_fp32',
      parameters: { config: { string_param: config } },
    });
    const { config: loadedConfig } = await call(client, 'ModelConfig', { name: 'identity_fp32' });
    expect(loadedConfig.max_batch_size).toBe(4);
  });

  it('TraceSetting: global read and a per-model update', async () => {
    const global = await call(client, 'TraceSetting', {});
    expect(Object.keys(global.settings)).toEqual(expect.arrayContaining(['trace_level', 'trace_rate', 'trace_count']));
    const updated = await call(client, 'TraceSetting', {
      model_name: 'simple',
      settings: { trace_rate: { value: ['7'] } },
    });
    expect(updated.settings.trace_rate).toEqual({ value: ['7'] });
  });

  it('LogSettings: read all six, update one', async () => {
    const before = await call(client, 'LogSettings', {});
    expect(Object.keys(before.settings).sort()).toEqual(
      ['log_error', 'log_file', 'log_format', 'log_info', 'log_verbose_level', 'log_warning'],
    );
    const after = await call(client, 'LogSettings', { settings: { log_verbose_level: { uint32_param: 1 } } });
    expect(after.settings.log_verbose_level).toMatchObject({ uint32_param: 1 });
    await call(client, 'LogSettings', { settings: { log_verbose_level: { uint32_param: 0 } } });
  });

  it('shared memory is off by default: UNIMPLEMENTED in Triton words, empty status lists', async () => {
    for (const method of ['SystemSharedMemoryRegister', 'CudaSharedMemoryRegister', 'SystemSharedMemoryUnregister']) {
      const err = await callError(client, method, { name: 'r', key: '/k', byte_size: 64 });
      expect(err.code).toBe(grpc.status.UNIMPLEMENTED);
      expect(err.details).toBe("Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.");
    }
    expect(await call(client, 'SystemSharedMemoryStatus', {})).toEqual({ regions: {} });
    expect(await call(client, 'CudaSharedMemoryStatus', {})).toEqual({ regions: {} });
    const missing = await callError(client, 'SystemSharedMemoryStatus', { name: 'r' });
    expect(missing.code).toBe(grpc.status.NOT_FOUND);
  });
});

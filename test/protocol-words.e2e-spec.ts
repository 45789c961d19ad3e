/**
 * End-to-end, over real HTTP and gRPC: the extensions server metadata lists all answer; what
 * Nereid does not offer (shared memory) fails with an honest error; error messages that repeat
 * client text stay small enough for every client to receive them; Triton's words reach clients.
 */
import * as fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { MESSAGE_LIMIT } from '@nereid/protocol';
import type { RunningNereid } from '../apps/nereid/src/serve';
import { call, callError, inferenceClient, type Client } from './helpers/grpc-client';
import { getJson, makeRepository, postJson, ROOT, startTestServer } from './helpers/server';

const range = (n: number, f: (i: number) => number): number[] => Array.from({ length: n }, (_, i) => f(i));

function int32Bytes(values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeInt32LE(v, i * 4));
  return b;
}

function simpleJson(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: range(16, (i) => i) },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: range(16, () => 1) },
    ],
    ...extra,
  };
}

let nereid: RunningNereid & { http: string };
let client: Client;
let repo: string;

beforeAll(async () => {
  repo = makeRepository({ simple: 'models/simple' });
  nereid = await startTestServer({ modelRepositories: [repo], modelControlMode: 'explicit', loadModels: ['simple'], allowModelFileOverrides: true });
  client = inferenceClient(nereid.grpcPort);
});

afterAll(async () => {
  client?.close();
  await nereid?.close();
  if (repo) fs.rmSync(repo, { recursive: true, force: true });
});

const infer = (body: unknown) => postJson(`${nereid.http}/v2/models/simple/infer`, body);

/** The direct-strategy accumulator (implicit state ACC_IN -> ACC_OUT), loaded with a config override. */
const ACCUMULATOR_ONNX = `${ROOT}/test/fixtures/onnx/accumulator_short_idle/1/model.onnx`;
const int32Control = (name: string, kind: string) => ({ name, control: [{ kind, int32_false_true: [0, 1] }] });
const ACCUMULATOR_CONFIG = {
  backend: 'onnxruntime',
  max_batch_size: 8,
  sequence_batching: {
    direct: {},
    control_input: [int32Control('START', 'CONTROL_SEQUENCE_START'), int32Control('READY', 'CONTROL_SEQUENCE_READY')],
    state: [{
      input_name: 'ACC_IN', output_name: 'ACC_OUT', data_type: 'TYPE_INT32', dims: [1],
      initial_state: [{ data_type: 'TYPE_INT32', dims: [1], zero_data: true, name: 'zero' }],
    }],
  },
  input: [{ name: 'INPUT', data_type: 'TYPE_INT32', dims: [1] }],
  output: [{ name: 'OUTPUT', data_type: 'TYPE_INT32', dims: [1] }],
  instance_group: [{ count: 1, kind: 'KIND_CPU' }],
};

/** One call per advertised extension that fails unless the extension works. */
const PROBES: Record<string, () => Promise<void>> = {
  classification: async () => {
    const r = await infer(simpleJson({ outputs: [{ name: 'OUTPUT0', parameters: { classification: 2 } }] }));
    expect(r.status).toBe(200);
    expect(r.body.outputs[0]).toMatchObject({ name: 'OUTPUT0', datatype: 'BYTES', shape: [1, 2], data: ['16:15', '15:14'] });
  },
  model_repository: async () => {
    const r = await postJson(`${nereid.http}/v2/repository/index`, {});
    expect(r.status).toBe(200);
    expect(r.body).toEqual([{ name: 'simple', version: '1', state: 'READY' }]);
  },
  'model_repository(unload_dependents)': async () => {
    const r = await postJson(`${nereid.http}/v2/repository/models/simple/unload`, { parameters: { unload_dependents: true } });
    expect(r.status).toBe(200);
    expect((await fetch(`${nereid.http}/v2/models/simple/ready`)).status).toBe(400);
    expect((await postJson(`${nereid.http}/v2/repository/models/simple/load`)).status).toBe(200);
  },
  schedule_policy: async () => {
    const r = await infer(simpleJson({ parameters: { priority: 1, timeout: 10_000_000 } }));
    expect(r.status).toBe(200);
  },
  model_configuration: async () => {
    const r = await getJson(`${nereid.http}/v2/models/simple/config`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ name: 'simple', max_batch_size: 8 });
  },
  binary_tensor_data: async () => {
    const r = await fetch(`${nereid.http}/v2/models/simple/infer`, {
      method: 'POST',
      body: JSON.stringify(simpleJson({ parameters: { binary_data_output: true } })),
    });
    expect(r.status).toBe(200);
    const headerLength = Number(r.headers.get('inference-header-content-length'));
    expect((await r.arrayBuffer()).byteLength).toBe(headerLength + 128);
  },
  parameters: async () => {
    const r = await infer(simpleJson({ parameters: { custom_key: 'v', other: 3 } }));
    expect(r.status).toBe(200);
  },
  statistics: async () => {
    const r = await getJson(`${nereid.http}/v2/models/simple/stats`);
    expect(r.status).toBe(200);
    expect((r.body as { model_stats: unknown[] }).model_stats).toHaveLength(1);
  },
  // One request traced: the model's trace_count of 1 is spent.
  trace: async () => {
    const on = await postJson(`${nereid.http}/v2/models/simple/trace/setting`, { trace_level: ['TIMESTAMPS'], trace_rate: '1', trace_count: '1' });
    expect(on.status).toBe(200);
    expect((await infer(simpleJson())).status).toBe(200);
    expect(((await getJson(`${nereid.http}/v2/models/simple/trace/setting`)).body as { trace_count: string }).trace_count).toBe('0');
    await postJson(`${nereid.http}/v2/models/simple/trace/setting`, { trace_level: null, trace_rate: null, trace_count: null });
  },
  logging: async () => {
    const r = await getJson(`${nereid.http}/v2/logging`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ log_verbose_level: expect.any(Number) });
  },
  // Last: it loads a model of its own (the repository probe above expects `simple` alone).
  sequence: async () => {
    const load = await postJson(`${nereid.http}/v2/repository/models/running_sum/load`, {
      parameters: { config: JSON.stringify(ACCUMULATOR_CONFIG), 'file:1/model.onnx': fs.readFileSync(ACCUMULATOR_ONNX).toString('base64') },
    });
    expect(load.status).toBe(200);
    const step = async (value: number, parameters: Record<string, unknown>) => {
      const r = await postJson(`${nereid.http}/v2/models/running_sum/infer`, {
        inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [value] }],
        parameters,
      });
      expect(r.status).toBe(200);
      // The state output stays inside the server.
      expect(r.body.outputs.map((o: { name: string }) => o.name)).toEqual(['OUTPUT']);
      return r.body.outputs[0].data[0] as number;
    };
    expect(await step(5, { sequence_id: 7, sequence_start: true })).toBe(5);
    expect(await step(7, { sequence_id: 'other', sequence_start: true })).toBe(7);
    expect(await step(2, { sequence_id: 7, sequence_end: true })).toBe(7);
    const ended = await postJson(`${nereid.http}/v2/models/running_sum/infer`, {
      inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [1] }],
      parameters: { sequence_id: 7 },
    });
    expect(ended).toMatchObject({
      status: 400,
      body: { error: "inference request for sequence 7 to model 'running_sum' must specify the START flag on the first request of the sequence" },
    });
    expect((await postJson(`${nereid.http}/v2/repository/models/running_sum/unload`)).status).toBe(200);
  },
};

describe('advertised extensions', () => {
  it('are the same over HTTP and gRPC, and none of them is one Nereid lacks', async () => {
    const http = (await getJson(`${nereid.http}/v2`)).body as { extensions: string[] };
    const grpcMeta = await call(client, 'ServerMetadata', {});
    expect(grpcMeta.extensions).toEqual(http.extensions);
    for (const missing of ['system_shared_memory', 'cuda_shared_memory']) {
      expect(http.extensions).not.toContain(missing);
    }
    // Every listed extension has a probe below (a new one needs one), and every probe is listed.
    expect([...http.extensions].sort()).toEqual(Object.keys(PROBES).sort());
  });

  it.each(Object.keys(PROBES))('%s answers', async (extension) => {
    await PROBES[extension]();
  });
});

describe('shared memory (off by default: --allow-client-shm=false)', () => {
  const words = "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.";

  it("HTTP register/unregister answer 501 in Triton's words", async () => {
    for (const path of ['systemsharedmemory/region/r/register', 'cudasharedmemory/region/r/register', 'systemsharedmemory/unregister']) {
      const r = await postJson(`${nereid.http}/v2/${path}`, { key: '/k', offset: 0, byte_size: 64 });
      expect(r).toMatchObject({ status: 501, body: { error: words } });
    }
    expect(await getJson(`${nereid.http}/v2/systemsharedmemory/status`)).toEqual({ status: 200, body: [] });
  });

  it('gRPC register/unregister answer UNIMPLEMENTED with the same words', async () => {
    for (const method of ['SystemSharedMemoryRegister', 'CudaSharedMemoryRegister', 'CudaSharedMemoryUnregister']) {
      const err = await callError(client, method, { name: 'r', key: '/k', byte_size: 64 });
      expect(err.code).toBe(grpc.status.UNIMPLEMENTED);
      expect(err.details).toBe(words);
    }
  });
});

describe('client text repeated in errors is clipped', () => {
  const huge = 'N'.repeat(1024 * 1024);
  const clipped = `${'N'.repeat(256)}...`;

  it('over gRPC: a 1 MB input name and id come back as INVALID_ARGUMENT with a short message', async () => {
    const err = await callError(client, 'ModelInfer', {
      model_name: 'simple',
      id: huge,
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
        { name: huge, datatype: 'INT32', shape: [1, 16] },
      ],
      raw_input_contents: [int32Bytes(range(16, (i) => i)), int32Bytes(range(16, (i) => i))],
    });
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toBe(`unexpected inference input '${clipped}' for model 'simple'`);
    const dup = await callError(client, 'ModelInfer', {
      model_name: 'simple',
      id: huge,
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
      ],
      raw_input_contents: [int32Bytes(range(16, (i) => i)), int32Bytes(range(16, (i) => i))],
    });
    expect(dup.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(dup.details).toBe(`[request id: ${clipped}] input 'INPUT0' already exists in request`);
  });

  it('over gRPC: many long names in one message stay within the cap', async () => {
    const names = Array.from({ length: 64 }, (_, i) => `${i}-${'x'.repeat(4000)}`);
    const err = await callError(client, 'ModelInfer', {
      model_name: 'simple',
      inputs: names.map((name) => ({ name, datatype: 'INT32', shape: [1, 16] })),
      raw_input_contents: names.map(() => int32Bytes(range(16, (i) => i))),
    });
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/^\[request id: <id_unknown>\] expected 2 inputs but got 64 inputs for model 'simple'/);
    expect(err.details.endsWith('...')).toBe(true);
    expect(encodeURI(err.details).length).toBeLessThanOrEqual(MESSAGE_LIMIT);
  });

  it('over HTTP: a 1 MB input name comes back clipped', async () => {
    const body = simpleJson();
    (body.inputs as { name: string }[])[1].name = huge;
    const r = await infer(body);
    expect(r).toMatchObject({ status: 400, body: { error: `unexpected inference input '${clipped}' for model 'simple'` } });
  });
});

describe("Triton's words reach clients", () => {
  it("gRPC: typed contents with raw_input_contents (Triton's example client matches on this)", async () => {
    // grpc_explicit_int_content_client.py: a valid request with int_contents, then one raw entry.
    const inputs = [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], contents: { int_contents: range(16, (i) => i) } },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], contents: { int_contents: range(16, () => 1) } },
    ];
    const ok = await call(client, 'ModelInfer', { model_name: 'simple', inputs });
    expect(ok.outputs).toHaveLength(2);
    const err = await callError(client, 'ModelInfer', {
      model_name: 'simple',
      inputs: [{ ...inputs[0], contents: { int_contents: range(8, (i) => i + 8) } }, inputs[1]],
      raw_input_contents: [int32Bytes(range(8, (i) => i))],
    });
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toBe("contents field must not be specified when using raw_input_contents for 'INPUT0' for model 'simple'");
  });

  it('HTTP: an output requested twice', async () => {
    const dup = await infer(simpleJson({ outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT0' }] }));
    expect(dup).toMatchObject({ status: 400, body: { error: "[request id: <id_unknown>] output 'OUTPUT0' already exists in request" } });
  });
});

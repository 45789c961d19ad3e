/**
 * End-to-end over real gRPC: client system shared memory with `--allow-client-shm=true`. The first
 * test makes the calls of Triton's simple_grpc_shm_client.py (tritonclient.grpc +
 * tritonclient.utils.shared_memory) against the `simple` model, unary and streaming; the others are
 * the bounds cases, the parameter checks of Triton's gRPC front door, and the flag left off.
 */
import * as fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import type { RunningNereid } from '../apps/nereid/src/serve';
import { call, callError, inferenceClient, type Client, type Msg } from './helpers/grpc-client';
import { makeRepository, startTestServer } from './helpers/server';
import { descriptorsOn, INPUT0, INPUT1, ShmObjects, type ShmObject } from './helpers/shm-region';

let server: RunningNereid;
let client: Client;
const objects = new ShmObjects();
const region = objects.make;

/** InferInput.set_shared_memory / InferRequestedOutput.set_shared_memory, as the client sends them. */
function shmParams(regionName: string, byteSize: number, offset = 0): Msg {
  const p: Msg = { shared_memory_region: { string_param: regionName }, shared_memory_byte_size: { int64_param: byteSize } };
  if (offset !== 0) p.shared_memory_offset = { int64_param: offset };
  return p;
}

function shmInfer(input: string, output: string, o: { inOffset1?: number; outSize0?: number } = {}): Msg {
  return {
    model_name: 'simple',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: shmParams(input, 64) },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: shmParams(input, 64, o.inOffset1 ?? 64) },
    ],
    outputs: [
      { name: 'OUTPUT0', parameters: shmParams(output, o.outSize0 ?? 64) },
      { name: 'OUTPUT1', parameters: shmParams(output, 64, 64) },
    ],
  };
}

beforeAll(async () => {
  server = await startTestServer({ modelRepositories: [makeRepository({ simple: 'models/simple' })], allowClientShm: true });
  client = inferenceClient(server.grpcPort);
});

afterAll(async () => {
  client?.close();
  await server?.close();
  objects.destroyAll();
});

describe("Triton's simple_grpc_shm_client.py, unchanged calls", () => {
  it('registers input and output regions, infers simple through them, reads the outputs, unregisters', async () => {
    await call(client, 'SystemSharedMemoryUnregister', {});
    await call(client, 'CudaSharedMemoryUnregister', {});

    const out = region('output_simple', 128);
    await call(client, 'SystemSharedMemoryRegister', { name: 'output_data', key: out.key, offset: 0, byte_size: 128 });
    const inp = region('input_simple', 128);
    inp.set(0, INPUT0);
    inp.set(64, INPUT1);
    await call(client, 'SystemSharedMemoryRegister', { name: 'input_data', key: inp.key, offset: 0, byte_size: 128 });

    const r = await call(client, 'ModelInfer', shmInfer('input_data', 'output_data'));
    expect(r.outputs.map((o: Msg) => [o.name, o.datatype, o.shape])).toEqual([
      ['OUTPUT0', 'INT32', ['1', '16']],
      ['OUTPUT1', 'INT32', ['1', '16']],
    ]);
    // One raw entry per output, empty for outputs written into shared memory (as Triton answers).
    expect(r.raw_output_contents.map((b: Buffer) => b.length)).toEqual([0, 0]);
    expect(out.int32s(0, 16)).toEqual([...INPUT0].map((v, i) => v + INPUT1[i]));
    expect(out.int32s(64, 16)).toEqual([...INPUT0].map((v, i) => v - INPUT1[i]));

    const status = await call(client, 'SystemSharedMemoryStatus', {});
    expect(status.regions).toEqual({
      input_data: { name: 'input_data', key: inp.key, offset: '0', byte_size: '128' },
      output_data: { name: 'output_data', key: out.key, offset: '0', byte_size: '128' },
    });
    expect((await call(client, 'SystemSharedMemoryStatus', { name: 'input_data' })).regions).toEqual({
      input_data: { name: 'input_data', key: inp.key, offset: '0', byte_size: '128' },
    });

    await call(client, 'SystemSharedMemoryUnregister', { name: 'input_data' });
    await call(client, 'SystemSharedMemoryUnregister', {});
    expect(await call(client, 'SystemSharedMemoryStatus', {})).toEqual({ regions: {} });
    expect(descriptorsOn(out.file) + descriptorsOn(inp.file)).toBe(0);
  });

  it('works the same over ModelStreamInfer', async () => {
    const inp = region('stream_in', 128);
    inp.set(0, INPUT0);
    inp.set(64, INPUT1);
    const out = region('stream_out', 128);
    await call(client, 'SystemSharedMemoryRegister', { name: 'sin', key: inp.key, byte_size: 128 });
    await call(client, 'SystemSharedMemoryRegister', { name: 'sout', key: out.key, byte_size: 128 });
    const stream = client.ModelStreamInfer();
    const answer = new Promise<Msg>((resolve) => stream.once('data', resolve));
    stream.write({ ...shmInfer('sin', 'sout'), id: 's1' });
    const msg = await answer;
    stream.end();
    expect(msg.error_message).toBe('');
    expect(msg.infer_response.raw_output_contents.map((b: Buffer) => b.length)).toEqual([0, 0]);
    expect(out.int32s(0, 16)).toEqual([...INPUT0].map((v) => v + 1));
    await call(client, 'SystemSharedMemoryUnregister', {});
  });
});

describe('errors', () => {
  let inp: ShmObject;

  beforeAll(async () => {
    inp = region('in', 128);
    inp.set(0, INPUT0);
    inp.set(64, INPUT1);
    await call(client, 'SystemSharedMemoryRegister', { name: 'in', key: inp.key, byte_size: 128 });
    await call(client, 'SystemSharedMemoryRegister', { name: 'out', key: region('out', 128).key, byte_size: 128 });
  });

  afterAll(async () => {
    await call(client, 'SystemSharedMemoryUnregister', {});
  });

  it.each([
    ['an unregistered region', shmInfer('nope', 'out'), grpc.status.NOT_FOUND, "Unable to find shared memory region: 'nope'"],
    ['offset + size past the region', shmInfer('in', 'out', { inOffset1: 96 }), grpc.status.INVALID_ARGUMENT, "Invalid offset + byte size for shared memory region: 'in'"],
    [
      'an output region too small',
      shmInfer('in', 'out', { outSize0: 16 }),
      grpc.status.INTERNAL,
      "shared memory size specified with the request for output 'OUTPUT0' (16 bytes) should be at least 64 bytes to hold the results",
    ],
  ])('%s', async (_case, request, code, details) => {
    const err = await callError(client, 'ModelInfer', request);
    expect(err.code).toBe(code);
    expect(err.details).toBe(details);
  });

  it('counts an answer that cannot be written into its output region as a failed request, not a success', async () => {
    const counts = async (): Promise<{ success: number; fail: number }> => {
      const stats = (await call(client, 'ModelStatistics', { name: 'simple' })).model_stats[0].inference_stats;
      return { success: Number(stats.success.count), fail: Number(stats.fail.count) };
    };
    const before = await counts();
    const err = await callError(client, 'ModelInfer', shmInfer('in', 'out', { outSize0: 16 }));
    expect(err.code).toBe(grpc.status.INTERNAL);
    expect(await counts()).toEqual({ success: before.success, fail: before.fail + 1 });
    // The same over a stream: the error in the stream's answer, and a failure counted.
    const stream = client.ModelStreamInfer();
    const answer = new Promise<Msg>((resolve) => stream.once('data', resolve));
    stream.write({ ...shmInfer('in', 'out', { outSize0: 16 }), id: 'small' });
    const msg = await answer;
    stream.end();
    expect(msg.error_message).toBe("shared memory size specified with the request for output 'OUTPUT0' (16 bytes) should be at least 64 bytes to hold the results");
    expect(msg.infer_response.id).toBe('small');
    expect(await counts()).toEqual({ success: before.success, fail: before.fail + 2 });
    // A good request still counts as a success.
    await call(client, 'ModelInfer', shmInfer('in', 'out'));
    expect(await counts()).toEqual({ success: before.success + 1, fail: before.fail + 2 });
  });

  it("checks the parameters as Triton's gRPC front door does", async () => {
    const input = (parameters: Msg, contents?: Msg): Msg => ({
      model_name: 'simple',
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters, ...(contents ? { contents } : {}) },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: shmParams('in', 64, 64) },
      ],
    });
    const cases: [Msg, string][] = [
      [input({ shared_memory_region: { int64_param: 1 } }), "invalid value type for 'shared_memory_region' parameter for tensor 'INPUT0', expected string_param."],
      [input({ shared_memory_offset: { int64_param: 0 } }), "'shared_memory_offset' can not be specified without 'shared_memory_region' parameter for tensor 'INPUT0'"],
      [
        input({ shared_memory_region: { string_param: 'in' }, shared_memory_byte_size: { string_param: '64' } }),
        "invalid value type for 'shared_memory_byte_size' parameter for tensor 'INPUT0', expected int64_param.",
      ],
      [
        input(shmParams('in', 64), { int_contents: [...INPUT0] }),
        "unexpected 'content' provided when using shared memory for input tensor 'INPUT0' for model 'simple'",
      ],
      [
        { ...shmInfer('in', 'out'), outputs: [{ name: 'OUTPUT0', parameters: { ...shmParams('out', 64), classification: { int64_param: 2 } } }] },
        "output can't set both 'shared_memory_region' and 'classification'",
      ],
    ];
    for (const [request, details] of cases) {
      const err = await callError(client, 'ModelInfer', request);
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toBe(details);
    }
  });

  it('a region unlinked while registered keeps serving the object it registered', async () => {
    const o = region('unlinked', 128);
    o.set(0, INPUT0);
    o.set(64, INPUT1);
    await call(client, 'SystemSharedMemoryRegister', { name: 'gone', key: o.key, byte_size: 128 });
    fs.unlinkSync(o.file);
    const r = await call(client, 'ModelInfer', { ...shmInfer('gone', 'out'), outputs: [] });
    expect([...new Int32Array(new Uint8Array(r.raw_output_contents[0]).buffer)]).toEqual([...INPUT0].map((v) => v + 1));
    // The key names no object any more: registering it again fails, without naming it.
    const err = await callError(client, 'SystemSharedMemoryRegister', { name: 'again', key: o.key, byte_size: 128 });
    expect(err.code).toBe(grpc.status.INTERNAL);
    expect(err.details).toBe("Unable to open shared memory region: 'again'");
    await call(client, 'SystemSharedMemoryUnregister', { name: 'gone' });
  });

  it("registration errors in Triton's words, never naming the key; CUDA answers UNIMPLEMENTED", async () => {
    const taken = await callError(client, 'SystemSharedMemoryRegister', { name: 'in', key: inp.key, byte_size: 128 });
    expect([taken.code, taken.details]).toEqual([grpc.status.ALREADY_EXISTS, "shared memory region 'in' already in manager"]);
    const past = await callError(client, 'SystemSharedMemoryRegister', { name: 'p', key: inp.key, offset: 64, byte_size: 128 });
    expect([past.code, past.details]).toEqual([grpc.status.INVALID_ARGUMENT, "failed to register shared memory region 'p': invalid args"]);
    const traversal = await callError(client, 'SystemSharedMemoryRegister', { name: 't', key: '/../../etc/shadow', byte_size: 1 });
    expect(traversal.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(traversal.details).not.toContain('shadow');
    const cuda = await callError(client, 'CudaSharedMemoryRegister', { name: 'g', raw_handle: Buffer.alloc(64), device_id: 0, byte_size: 64 });
    expect([cuda.code, cuda.details]).toEqual([grpc.status.UNIMPLEMENTED, "failed to register CUDA shared memory region: 'g', GPUs not supported"]);
    const cudaStatus = await callError(client, 'CudaSharedMemoryStatus', { name: 'in' });
    expect([cudaStatus.code, cudaStatus.details]).toEqual([
      grpc.status.NOT_FOUND,
      "The region named 'in' is registered as system shared memory, not CUDA shared memory",
    ]);
  });

  it('lists system_shared_memory in ServerMetadata', async () => {
    const meta = await call(client, 'ServerMetadata', {});
    expect(meta.extensions).toContain('system_shared_memory');
    expect(meta.extensions).not.toContain('cuda_shared_memory');
  });
});

describe('--allow-client-shm off (the default)', () => {
  it('answers UNIMPLEMENTED in Triton words and does not list the extension', async () => {
    const off = await startTestServer({ modelRepositories: [makeRepository({ simple: 'models/simple' })] });
    const offClient = inferenceClient(off.grpcPort);
    try {
      const o = region('off', 64);
      for (const method of ['SystemSharedMemoryRegister', 'SystemSharedMemoryUnregister']) {
        const err = await callError(offClient, method, { name: 'r', key: o.key, byte_size: 64 });
        expect(err.code).toBe(grpc.status.UNIMPLEMENTED);
        expect(err.details).toBe("Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.");
      }
      expect(descriptorsOn(o.file)).toBe(0);
      expect((await call(offClient, 'ServerMetadata', {})).extensions).not.toContain('system_shared_memory');
    } finally {
      offClient.close();
      await off.close();
    }
  });
});

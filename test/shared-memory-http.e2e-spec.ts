/**
 * End-to-end over real HTTP: client system shared memory with `--allow-client-shm=true`. The first
 * test makes the calls of Triton's simple_http_shm_client.py (tritonclient.http +
 * tritonclient.utils.shared_memory) against the `simple` model; the others are the bounds and the
 * hardening cases, and the flag left off.
 */
import * as fs from 'node:fs';
import type { RunningNereid } from '../apps/nereid/src/serve';
import { getJson, makeRepository, postJson, startTestServer } from './helpers/server';
import { descriptorsOn, INPUT0, INPUT1, ShmObjects, type ShmObject } from './helpers/shm-region';

type Server = RunningNereid & { http: string };

let server: Server;
const objects = new ShmObjects();
const region = objects.make;

/** An infer body whose inputs and outputs all live in shared memory (InferInput.set_shared_memory, ...). */
function shmInfer(input: string, output: string, o: { inOffset1?: number; outSize0?: number; inSize0?: number } = {}): unknown {
  return {
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: { shared_memory_region: input, shared_memory_byte_size: o.inSize0 ?? 64 } },
      {
        name: 'INPUT1',
        shape: [1, 16],
        datatype: 'INT32',
        parameters: { shared_memory_region: input, shared_memory_byte_size: 64, shared_memory_offset: o.inOffset1 ?? 64 },
      },
    ],
    outputs: [
      { name: 'OUTPUT0', parameters: { shared_memory_region: output, shared_memory_byte_size: o.outSize0 ?? 64 } },
      { name: 'OUTPUT1', parameters: { shared_memory_region: output, shared_memory_byte_size: 64, shared_memory_offset: 64 } },
    ],
  };
}

const url = (path: string): string => `${server.http}/v2/${path}`;

beforeAll(async () => {
  server = await startTestServer({ modelRepositories: [makeRepository({ simple: 'models/simple' })], allowClientShm: true });
});

afterAll(async () => {
  await server?.close();
  objects.destroyAll();
});

describe("Triton's simple_http_shm_client.py, unchanged calls", () => {
  it('registers input and output regions, infers simple through them, reads the outputs, unregisters', async () => {
    // triton_client.unregister_system_shared_memory(); unregister_cuda_shared_memory()
    expect((await postJson(url('systemsharedmemory/unregister'))).status).toBe(200);
    expect((await postJson(url('cudasharedmemory/unregister'))).status).toBe(200);

    const out = region('output_simple', 128);
    expect((await postJson(url('systemsharedmemory/region/output_data/register'), { key: out.key, offset: 0, byte_size: 128 })).status).toBe(200);
    const inp = region('input_simple', 128);
    inp.set(0, INPUT0);
    inp.set(64, INPUT1);
    expect((await postJson(url('systemsharedmemory/region/input_data/register'), { key: inp.key, offset: 0, byte_size: 128 })).status).toBe(200);

    const r = await postJson(url('models/simple/infer'), shmInfer('input_data', 'output_data'));
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    // Outputs in shared memory: the response names them with datatype and shape, and carries no data.
    expect(r.body.outputs).toEqual([
      { name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16] },
      { name: 'OUTPUT1', datatype: 'INT32', shape: [1, 16] },
    ]);
    expect(out.int32s(0, 16)).toEqual([...INPUT0].map((v, i) => v + INPUT1[i]));
    expect(out.int32s(64, 16)).toEqual([...INPUT0].map((v, i) => v - INPUT1[i]));

    // get_system_shared_memory_status()
    const status = await getJson(url('systemsharedmemory/status'));
    expect(status.status).toBe(200);
    expect(status.body).toEqual(
      expect.arrayContaining([
        { name: 'output_data', key: out.key, offset: 0, byte_size: 128 },
        { name: 'input_data', key: inp.key, offset: 0, byte_size: 128 },
      ]),
    );
    expect(await getJson(url('systemsharedmemory/region/input_data/status'))).toEqual({
      status: 200,
      body: [{ name: 'input_data', key: inp.key, offset: 0, byte_size: 128 }],
    });

    expect((await postJson(url('systemsharedmemory/region/input_data/unregister'))).status).toBe(200);
    expect((await postJson(url('systemsharedmemory/unregister'))).status).toBe(200);
    expect(await getJson(url('systemsharedmemory/status'))).toEqual({ status: 200, body: [] });
    expect(descriptorsOn(out.file) + descriptorsOn(inp.file)).toBe(0);
  });

  it('mixes shared-memory inputs with JSON data and outputs in the body', async () => {
    const inp = region('mixed', 64);
    inp.set(0, INPUT0);
    expect((await postJson(url('systemsharedmemory/region/mixed/register'), { key: inp.key, byte_size: 64 })).status).toBe(200);
    const r = await postJson(url('models/simple/infer'), {
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: { shared_memory_region: 'mixed', shared_memory_byte_size: 64 } },
        { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: [...INPUT1] },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body.outputs[0].data).toEqual([...INPUT0].map((v) => v + 1));
    await postJson(url('systemsharedmemory/region/mixed/unregister'));
  });
});

describe('with the binary tensor extension', () => {
  it('takes one input from a region and one from the binary section, and answers one output in each', async () => {
    const inp = region('bin_in', 64);
    inp.set(0, INPUT0);
    const out = region('bin_out', 64);
    await postJson(url('systemsharedmemory/region/bin_in/register'), { key: inp.key, byte_size: 64 });
    await postJson(url('systemsharedmemory/region/bin_out/register'), { key: out.key, byte_size: 64 });
    const header = Buffer.from(
      JSON.stringify({
        inputs: [
          { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: { shared_memory_region: 'bin_in', shared_memory_byte_size: 64 } },
          { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } },
        ],
        outputs: [
          { name: 'OUTPUT0', parameters: { shared_memory_region: 'bin_out', shared_memory_byte_size: 64, binary_data: false } },
          { name: 'OUTPUT1', parameters: { binary_data: true } },
        ],
      }),
    );
    const r = await fetch(url('models/simple/infer'), {
      method: 'POST',
      headers: { 'inference-header-content-length': String(header.length) },
      body: Buffer.concat([header, Buffer.from(INPUT1.buffer)]),
    });
    expect(r.status).toBe(200);
    const body = Buffer.from(await r.arrayBuffer());
    const jsonLength = Number(r.headers.get('inference-header-content-length'));
    const json = JSON.parse(body.subarray(0, jsonLength).toString());
    expect(json.outputs).toEqual([
      { name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16] },
      { name: 'OUTPUT1', datatype: 'INT32', shape: [1, 16], parameters: { binary_data_size: 64 } },
    ]);
    expect(body.length - jsonLength).toBe(64); // only OUTPUT1 travels in the body
    const output1 = new Int32Array(body.buffer.slice(body.byteOffset + jsonLength, body.byteOffset + body.length));
    expect([...output1]).toEqual([...INPUT0].map((v) => v - 1));
    expect(out.int32s(0, 16)).toEqual([...INPUT0].map((v) => v + 1));
    await postJson(url('systemsharedmemory/unregister'));
  });
});

describe('registration', () => {
  it("answers Triton's words for a taken name, a missing field, a region past the object", async () => {
    const o = region('reg', 64);
    expect((await postJson(url('systemsharedmemory/region/taken/register'), { key: o.key, byte_size: 64 })).status).toBe(200);
    expect(await postJson(url('systemsharedmemory/region/taken/register'), { key: o.key, byte_size: 64 })).toMatchObject({
      status: 400,
      body: { error: "shared memory region 'taken' already in manager" },
    });
    expect((await postJson(url('systemsharedmemory/region/x/register'), { byte_size: 64 })).body).toEqual({
      error: "Shared memory register request has no 'key' field",
    });
    expect((await postJson(url('systemsharedmemory/region/x/register'), { key: o.key })).body).toEqual({
      error: "Shared memory register request has no 'byte_size' field",
    });
    expect(await postJson(url('systemsharedmemory/region/x/register'), { key: o.key, offset: 32, byte_size: 64 })).toMatchObject({
      status: 400,
      body: { error: "failed to register shared memory region 'x': invalid args" },
    });
    expect(await getJson(url('systemsharedmemory/region/x/status'))).toEqual({
      status: 404,
      body: { error: "Unable to find system shared memory region: 'x'" },
    });
    await postJson(url('systemsharedmemory/region/taken/unregister'));
  });

  it('opens only objects directly under /dev/shm, never names the key in an error, keeps clear of the python backend', async () => {
    const secret = 'nereid-e2e-no-such-object-4f1d';
    for (const key of [`/${secret}`, `/../etc/${secret}`, `/x/${secret}`, `${secret}`, '/triton_python_backend_shm_region_7', '/nereid-py-1-a-n1']) {
      const r = await postJson(url('systemsharedmemory/region/evil/register'), { key, byte_size: 8 });
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.body.error).toContain("'evil'");
      expect(r.body.error).not.toContain(secret);
      expect(r.body.error).not.toContain('_region_7');
    }
    expect(await getJson(url('systemsharedmemory/status'))).toEqual({ status: 200, body: [] });
  });

  it('CUDA shared memory answers UNSUPPORTED (no GPU); its status lists nothing', async () => {
    expect(await postJson(url('cudasharedmemory/region/gpu/register'), { raw_handle: { b64: '' }, device_id: 0, byte_size: 64 })).toMatchObject({
      status: 501,
      body: { error: "failed to register CUDA shared memory region: 'gpu', GPUs not supported" },
    });
    expect(await getJson(url('cudasharedmemory/status'))).toEqual({ status: 200, body: [] });
  });
});

describe('bounds, checked at every use', () => {
  let inp: ShmObject;
  let out: ShmObject;

  beforeAll(async () => {
    inp = region('in', 128);
    inp.set(0, INPUT0);
    inp.set(64, INPUT1);
    out = region('out', 128);
    await postJson(url('systemsharedmemory/region/in/register'), { key: inp.key, byte_size: 128 });
    await postJson(url('systemsharedmemory/region/out/register'), { key: out.key, byte_size: 128 });
  });

  afterAll(async () => {
    await postJson(url('systemsharedmemory/unregister'));
  });

  it.each([
    ['an unregistered region', shmInfer('nope', 'out'), 404, "Unable to find shared memory region: 'nope'"],
    ['offset + size past the region', shmInfer('in', 'out', { inOffset1: 96 }), 400, "Invalid offset + byte size for shared memory region: 'in'"],
    ['an offset outside the region', shmInfer('in', 'out', { inOffset1: 128 }), 400, "Invalid offset for shared memory region: 'in'"],
    [
      'an input size that does not match its shape',
      shmInfer('in', 'out', { inSize0: 60 }),
      400,
      "input byte size mismatch for input 'INPUT0' for model 'simple'. Expected 64, got 60",
    ],
    [
      'an output region too small',
      shmInfer('in', 'out', { outSize0: 32 }),
      500,
      "shared memory size specified with the request for output 'OUTPUT0' (32 bytes) should be at least 64 bytes to hold the results",
    ],
  ])('%s', async (_case, body, status, error) => {
    const r = await postJson(url('models/simple/infer'), body);
    expect(r.status).toBe(status);
    expect(r.body.error).toContain(error);
  });

  it('reads no more than --http-max-input-size for one request, whatever size the region claims (a sparse 1 TiB object)', async () => {
    const o = region('sparse', 0);
    fs.truncateSync(o.file, 2 ** 40);
    await postJson(url('systemsharedmemory/region/sparse/register'), { key: o.key, byte_size: 2 ** 40 });
    const r = await postJson(url('models/simple/infer'), {
      inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: { shared_memory_region: 'sparse', shared_memory_byte_size: 2 ** 36 } }],
    });
    expect(r).toMatchObject({
      status: 400,
      body: {
        error: `shared memory input 'INPUT0' of ${2 ** 36} bytes takes the request's inputs past the maximum allowed input size of 67108864 bytes. Use --http-max-input-size to increase the limit.`,
      },
    });
    await postJson(url('systemsharedmemory/region/sparse/unregister'));
  });

  it("refuses an output in shared memory that is also asked in binary or as classification (Triton's words)", async () => {
    const output = (parameters: Record<string, unknown>): unknown => ({
      inputs: (shmInfer('in', 'out') as { inputs: unknown[] }).inputs,
      outputs: [{ name: 'OUTPUT0', parameters: { shared_memory_region: 'out', shared_memory_byte_size: 64, ...parameters } }],
    });
    expect((await postJson(url('models/simple/infer'), output({ binary_data: true }))).body).toEqual({
      error: "Output can't set both 'shared_memory_region' and 'binary_data'",
    });
    expect((await postJson(url('models/simple/infer'), output({ classification: 2 }))).body).toEqual({
      error: "Output can't set both 'shared_memory_region' and 'classification'",
    });
  });

  it('a region unlinked while registered: the object registered is still the one used, not a new file of its name', async () => {
    const o = region('unlinked', 128);
    o.set(0, INPUT0);
    o.set(64, INPUT1);
    await postJson(url('systemsharedmemory/region/gone/register'), { key: o.key, byte_size: 128 });
    fs.unlinkSync(o.file); // shm_unlink by its client
    fs.writeFileSync(o.file, Buffer.alloc(128, 0x7f)); // another object under the same key
    const r = await postJson(url('models/simple/infer'), { ...(shmInfer('gone', 'out') as object), outputs: undefined });
    expect(r.status).toBe(200);
    expect(r.body.outputs[0].data).toEqual([...INPUT0].map((v) => v + 1));
    await postJson(url('systemsharedmemory/region/gone/unregister'));
  });

  it('a region whose object shrank after registration is refused, and never grown by the server', async () => {
    const o = region('shrunk', 128);
    await postJson(url('systemsharedmemory/region/shrunk/register'), { key: o.key, byte_size: 128 });
    fs.truncateSync(o.file, 16);
    const r = await postJson(url('models/simple/infer'), shmInfer('in', 'shrunk'));
    expect(r).toMatchObject({
      status: 400,
      body: { error: "Invalid offset + byte size for shared memory region: 'shrunk': its object was truncated after it was registered" },
    });
    expect(fs.statSync(o.file).size).toBe(16);
    await postJson(url('systemsharedmemory/region/shrunk/unregister'));
  });
});

describe('server metadata and shutdown', () => {
  it('lists system_shared_memory (not cuda_shared_memory) with the flag on', async () => {
    const { extensions } = (await getJson(`${server.http}/v2`)).body as { extensions: string[] };
    expect(extensions).toContain('system_shared_memory');
    expect(extensions).not.toContain('cuda_shared_memory');
  });

  it('unregisters every region on shutdown: no descriptor left on the objects', async () => {
    const own = await startTestServer({ modelRepositories: [makeRepository({ simple: 'models/simple' })], allowClientShm: true });
    const o = region('shutdown', 64);
    expect((await postJson(`${own.http}/v2/systemsharedmemory/region/s/register`, { key: o.key, byte_size: 64 })).status).toBe(200);
    expect(descriptorsOn(o.file)).toBe(1);
    await own.close();
    expect(descriptorsOn(o.file)).toBe(0);
  });
});

describe('--allow-client-shm off (the default)', () => {
  it("refuses registration in Triton's words and does not list the extension", async () => {
    const off = await startTestServer({ modelRepositories: [makeRepository({ simple: 'models/simple' })] });
    try {
      const o = region('off', 64);
      const r = await postJson(`${off.http}/v2/systemsharedmemory/region/r/register`, { key: o.key, byte_size: 64 });
      expect(r).toMatchObject({
        status: 501,
        body: { error: "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable." },
      });
      expect(descriptorsOn(o.file)).toBe(0);
      const { extensions } = (await getJson(`${off.http}/v2`)).body as { extensions: string[] };
      expect(extensions).not.toContain('system_shared_memory');
      const infer = await postJson(`${off.http}/v2/models/simple/infer`, shmInfer('r', 'r'));
      expect(infer).toMatchObject({ status: 404, body: { error: "Unable to find shared memory region: 'r'" } });
    } finally {
      await off.close();
    }
  });
});

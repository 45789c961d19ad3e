/**
 * End-to-end: a client that truncates its shared-memory object while the server uses it. With
 * native/shm-map built the server maps regions, and an access past the end of a truncated object
 * raises SIGBUS (in onnxruntime's run reading an input, or in the copy of an output): the process
 * must stay up and answer the request with an error. Without the addon (NEREID_NATIVE=0) the same
 * cases run through pread/pwrite. A 16 MiB FP32 identity, so that the truncations land inside runs.
 */
import * as fs from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import type { RunningNereid } from '../apps/nereid/src/serve';
import * as grpc from '@grpc/grpc-js';
import { call, inferenceClient, type Client, type Msg } from './helpers/grpc-client';
import { getJson, makeRepository, postJson, startTestServer } from './helpers/server';
import { killChild } from './helpers/built-server';
import { ShmObjects } from './helpers/shm-region';

const ELEMENTS = 4 << 20;
const BYTES = ELEMENTS * 4;
const TRUNCATED = "Invalid offset + byte size for shared memory region: 'in': its object was truncated after it was registered";
const TRUNCATED_OUT = TRUNCATED.replace("'in'", "'out'");

let server: RunningNereid & { http: string };
let client: Client;
const objects = new ShmObjects();
const url = (path: string): string => `${server.http}/v2/${path}`;

const input = new Float32Array(ELEMENTS).map((_, i) => (i % 1000) * 0.5);
const inputBytes = new Uint8Array(input.buffer);

const httpBody = {
  inputs: [{ name: 'INPUT0', shape: [1, ELEMENTS], datatype: 'FP32', parameters: { shared_memory_region: 'in', shared_memory_byte_size: BYTES } }],
  outputs: [{ name: 'OUTPUT0', parameters: { shared_memory_region: 'out', shared_memory_byte_size: BYTES } }],
};

const grpcRequest: Msg = {
  model_name: 'identity_fp32',
  inputs: [
    {
      name: 'INPUT0',
      datatype: 'FP32',
      shape: [1, ELEMENTS],
      parameters: { shared_memory_region: { string_param: 'in' }, shared_memory_byte_size: { int64_param: BYTES } },
    },
  ],
  outputs: [{ name: 'OUTPUT0', parameters: { shared_memory_region: { string_param: 'out' }, shared_memory_byte_size: { int64_param: BYTES } } }],
};

/** Another process that shrinks `files` to one page and grows them back, as fast as it can, until killed. */
function truncator(files: string[]): ChildProcess {
  const script = `const fs = require('node:fs'); const files = ${JSON.stringify(files)};
    for (;;) { for (const f of files) fs.truncateSync(f, 4096); for (const f of files) fs.truncateSync(f, ${BYTES}); }`;
  return spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
}


/**
 * Sends requests for 3 s while another process shrinks and regrows both objects; `send` answers
 * whether its request got the results (and checks the error when not). Returns how many did which.
 */
async function whileTruncating(send: () => Promise<boolean>): Promise<{ ok: number; truncated: number }> {
  const child = truncator([inFile, outFile]);
  const outcomes = { ok: 0, truncated: 0 };
  try {
    const end = Date.now() + 3000;
    while (Date.now() < end) {
      if (await send()) outcomes.ok++;
      else outcomes.truncated++;
    }
  } finally {
    await killChild(child);
  }
  return outcomes;
}

function outputOf(file: string): Uint8Array {
  return fs.readFileSync(file);
}

let inFile: string;
let outFile: string;

beforeAll(async () => {
  server = await startTestServer({
    modelRepositories: [makeRepository({ identity_fp32: 'test/fixtures/onnx/identity_fp32' })],
    allowClientShm: true,
  });
  client = inferenceClient(server.grpcPort);
});

beforeEach(async () => {
  const inp = objects.make('trunc-in', BYTES);
  inp.set(0, input);
  const out = objects.make('trunc-out', BYTES);
  inFile = inp.file;
  outFile = out.file;
  expect((await postJson(url('systemsharedmemory/region/in/register'), { key: inp.key, byte_size: BYTES })).status).toBe(200);
  expect((await postJson(url('systemsharedmemory/region/out/register'), { key: out.key, byte_size: BYTES })).status).toBe(200);
});

afterEach(async () => {
  await postJson(url('systemsharedmemory/unregister'));
  objects.destroyAll();
});

afterAll(async () => {
  client?.close();
  await server?.close();
});

async function healthy(): Promise<void> {
  expect((await getJson(url('health/live'))).status).toBe(200);
}

describe('a region truncated between requests', () => {
  it('HTTP: answers the error while the object is short, and the right output once it is whole again', async () => {
    expect((await postJson(url('models/identity_fp32/infer'), httpBody)).status).toBe(200);
    expect(Buffer.from(outputOf(outFile)).equals(inputBytes)).toBe(true);
    fs.truncateSync(inFile, 4096);
    expect(await postJson(url('models/identity_fp32/infer'), httpBody)).toMatchObject({ status: 400, body: { error: TRUNCATED } });
    fs.truncateSync(outFile, 4096);
    fs.truncateSync(inFile, BYTES);
    // The input's pages past the first came back as zeros: the client writes it again.
    fs.writeFileSync(inFile, inputBytes);
    expect(await postJson(url('models/identity_fp32/infer'), httpBody)).toMatchObject({ status: 400, body: { error: TRUNCATED_OUT } });
    fs.truncateSync(outFile, BYTES);
    expect((await postJson(url('models/identity_fp32/infer'), httpBody)).status).toBe(200);
    expect(Buffer.from(outputOf(outFile)).equals(inputBytes)).toBe(true);
    await healthy();
  });
});

describe('a region truncated while requests use it (another process shrinks and regrows it)', () => {
  it('HTTP: every request answers the results or the error, the server stays up', async () => {
    const outcomes = await whileTruncating(async () => {
      const r = await postJson(url('models/identity_fp32/infer'), httpBody);
      if (r.status === 200) return true;
      expect(r.status).toBe(400);
      expect([TRUNCATED, TRUNCATED_OUT]).toContain(r.body.error);
      return false;
    });
    expect(outcomes.truncated).toBeGreaterThan(0);
    await healthy();
    // Whole again: the region serves the right output (a fresh mapping where the old one faulted).
    // (the truncator may have been stopped with either object short)
    fs.writeFileSync(inFile, inputBytes);
    fs.truncateSync(outFile, BYTES);
    expect((await postJson(url('models/identity_fp32/infer'), httpBody)).status).toBe(200);
    expect(Buffer.from(outputOf(outFile)).equals(inputBytes)).toBe(true);
  });

  it('gRPC: every request answers the results or INVALID_ARGUMENT, the server stays up', async () => {
    const outcomes = await whileTruncating(async () => {
      try {
        await call(client, 'ModelInfer', grpcRequest);
        return true;
      } catch (e) {
        const error = e as grpc.ServiceError;
        expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
        expect([TRUNCATED, TRUNCATED_OUT]).toContain(error.details);
        return false;
      }
    });
    expect(outcomes.truncated).toBeGreaterThan(0);
    await healthy();
    fs.writeFileSync(inFile, inputBytes);
    fs.truncateSync(outFile, BYTES);
    await call(client, 'ModelInfer', grpcRequest);
    expect(Buffer.from(outputOf(outFile)).equals(inputBytes)).toBe(true);
  });
});

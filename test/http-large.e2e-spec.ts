/**
 * End-to-end: large binary bodies (read into reused buffers) through an ONNX and a python identity
 * model, many at once and one after another, each with its own contents. Every answer must carry
 * exactly the bytes its request sent: a body buffer may be reused only once nothing reads it.
 */
import * as net from 'node:net';
import * as path from 'node:path';
import { makeRepository, ROOT, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

// 4 MiB of FP32: more than a loopback socket takes in one write, so answers are still being
// written while the next requests arrive (a body buffer reused too early would show in an answer).
const ELEMENTS = 1024 * 1024;

function request(seed: number, shape: number[]): { body: Buffer; headerLength: number; data: Buffer } {
  const values = new Float32Array(ELEMENTS);
  for (let i = 0; i < ELEMENTS; i++) values[i] = seed * 1000 + (i % 997);
  const data = Buffer.from(values.buffer);
  // Header lengths vary with the seed, so the binary section starts at different alignments.
  const header = Buffer.from(JSON.stringify({
    id: `r${seed}`.padEnd(3 + (seed % 8), 'x'),
    inputs: [{ name: 'INPUT0', shape, datatype: 'FP32', parameters: { binary_data_size: data.length } }],
    outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
  }));
  return { body: Buffer.concat([header, data]), headerLength: header.length, data };
}

async function roundTrip(server: Server, model: string, seed: number, shape: number[]): Promise<void> {
  const { body, headerLength, data } = request(seed, shape);
  const r = await fetch(`${server.http}/v2/models/${model}/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(headerLength) },
    body,
  });
  const bytes = Buffer.from(await r.arrayBuffer());
  expect(r.status).toBe(200);
  const jsonLength = Number(r.headers.get('inference-header-content-length'));
  const header = JSON.parse(bytes.subarray(0, jsonLength).toString());
  expect(header.id).toBe(`r${seed}`.padEnd(3 + (seed % 8), 'x'));
  expect(bytes.subarray(jsonLength).equals(data)).toBe(true);
}

describe('large HTTP bodies', () => {
  let server: Server;
  beforeAll(async () => {
    const repo = makeRepository({
      identity_fp32: 'test/fixtures/onnx/identity_fp32',
      identity: path.join(ROOT, 'test/fixtures/python/identity'),
    });
    server = await startTestServer({ modelRepositories: [repo] });
  }, 60_000);
  afterAll(() => server?.close());

  it.each([
    ['identity_fp32', [1, ELEMENTS]],
    ['identity', [ELEMENTS]],
  ])('%s answers each request of three busy clients with its own bytes', async (model, shape) => {
    // Three clients, each sending its next request as soon as it has read an answer.
    await Promise.all(Array.from({ length: 3 }, async (_, client) => {
      for (let k = 0; k < 5; k++) await roundTrip(server, model as string, client * 10 + k, shape as number[]);
    }));
  }, 60_000);

  it('answers a client that reads its 16 MiB answer late with its own bytes while other requests run (the output is freed only once written)', async () => {
    // More than loopback's socket buffers hold: the server's write of the answer stays pending
    // until the client reads, and the output buffer must live until then (libs/tensor/src/reclaim.ts).
    const elements = 4 * ELEMENTS;
    const values = new Float32Array(elements);
    for (let i = 0; i < elements; i++) values[i] = i % 65_521;
    const data = Buffer.from(values.buffer);
    const header = Buffer.from(JSON.stringify({
      inputs: [{ name: 'INPUT0', shape: [1, elements], datatype: 'FP32', parameters: { binary_data_size: data.length } }],
      outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
    }));
    const port = Number(new URL(server.http).port);
    const socket = net.connect(port, '127.0.0.1');
    socket.pause();
    socket.write(
      `POST /v2/models/identity_fp32/infer HTTP/1.1\r\nHost: x\r\nConnection: close\r\nInference-Header-Content-Length: ${header.length}\r\n` +
        `Content-Length: ${header.length + data.length}\r\n\r\n`,
    );
    socket.write(header);
    socket.write(data);
    // While the slow client's answer waits in the socket, other requests allocate and free outputs.
    await new Promise((r) => setTimeout(r, 300));
    for (let k = 0; k < 4; k++) await roundTrip(server, 'identity_fp32', 50 + k, [1, ELEMENTS]);
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.resume();
    await new Promise<void>((resolve, reject) => {
      socket.on('end', resolve);
      socket.on('error', reject);
    });
    const answer = Buffer.concat(chunks);
    const split = answer.indexOf('\r\n\r\n');
    const head = answer.subarray(0, split).toString();
    expect(head).toMatch(/^HTTP\/1\.1 200/);
    const jsonLength = Number(/inference-header-content-length: (\d+)/i.exec(head)?.[1]);
    const body = answer.subarray(split + 4);
    expect(body.length).toBe(jsonLength + data.length);
    expect(body.subarray(jsonLength).equals(data)).toBe(true);
  }, 60_000);
});

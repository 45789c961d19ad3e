/**
 * Decoded BYTES and repeated contents do not amplify memory without bound (issue 16). A request's
 * bytes are bounded by --http-max-input-size and charged to the budget of bodies held at once, but
 * decoded a 1-byte BYTES element is ~128 bytes (a view and its slot) and an empty gRPC
 * bytes_contents entry ~200 (protobufjs's Buffer): 12.5 MB of binary elements held ~330 MB, 1 M
 * empty bytes_contents entries (a 2 MB message) ~400 MB. Now such requests are refused before they
 * are decoded (HTTP 400, gRPC INVALID_ARGUMENT, with the limit's words), the server's RSS (the built
 * CLI in its own process, read from /proc) stays within a small bound, and a batch of 10,000
 * sentences still passes at the defaults.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import { status } from '@grpc/grpc-js';
import { killChild, startBuiltServer } from '../helpers/built-server';
import { call, callError, openInferStream, type Client } from '../helpers/grpc-client';
import { until } from '../helpers/poll';
import { makeRepository } from '../helpers/server';

const rssMiB = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

/** Runs `work` while sampling the server's RSS every 10 ms; the most it grew by, in MiB. */
async function peakGrowth<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; grewMiB: number }> {
  const before = rssMiB(pid);
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 10);
  try {
    const result = await work();
    peak = Math.max(peak, rssMiB(pid));
    return { result, grewMiB: peak - before };
  } finally {
    clearInterval(timer);
  }
}

function post(port: number, path: string, body: Buffer, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent: false, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A binary request of `n` 1-byte BYTES elements for identity_bytes (5 bytes each on the wire). */
function binaryAttack(n: number): { body: Buffer; header: string } {
  const data = Buffer.alloc(5 * n);
  for (let i = 0; i < n; i++) {
    data.writeUInt32LE(1, 5 * i);
    data[5 * i + 4] = 0x61;
  }
  const json = Buffer.from(JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, n], parameters: { binary_data_size: data.length } }] }));
  return { body: Buffer.concat([json, data]), header: String(json.length) };
}

const jsonRequest = (elements: string[]): Buffer =>
  Buffer.from(JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, elements.length], data: elements }] }));

const sentences = Array.from({ length: 10_000 }, (_, i) => `sentence ${i}: the quick brown fox jumps over the lazy dog`.padEnd(100, '.'));

const MAX_INPUT = 64 * 1024 * 1024;

describe('decoded BYTES elements and gRPC contents are bounded (issue 16)', () => {
  let child: ChildProcess | undefined;
  let httpPort: number;
  let client: Client;

  beforeAll(async () => {
    // The defaults: --http-max-input-size 64 MiB, --http-max-inflight-body-bytes 32 MiB.
    const repo = makeRepository({ identity_bytes: 'test/fixtures/onnx/identity_bytes', simple: 'models/simple' });
    ({ child, client, httpPort } = await startBuiltServer(repo, [], 60_000));
  }, 90_000);

  afterAll(async () => {
    client?.close();
    await killChild(child);
  });

  it('refuses HTTP binary and JSON requests of millions of tiny BYTES elements (400) before decoding them; RSS stays flat', async () => {
    const pid = child!.pid!;
    const n = 2_500_000; // 12.5 MB on the wire, ~330 MB decoded
    const binary = binaryAttack(n);
    const json = jsonRequest(new Array(2_000_000).fill('a')); // 8 MB of JSON
    const { result, grewMiB } = await peakGrowth(pid, () =>
      Promise.all([
        post(httpPort, '/v2/models/identity_bytes/infer', binary.body, { 'inference-header-content-length': binary.header, 'content-type': 'application/octet-stream' }),
        post(httpPort, '/v2/models/identity_bytes/infer', json),
      ]),
    );
    console.log(`HTTP: ${n} binary and 2,000,000 JSON 1-byte BYTES elements: ${result.map((r) => r.status).join(', ')}; server RSS grew by ${grewMiB.toFixed(0)} MiB at most`);
    expect(result[0].status).toBe(400);
    expect(JSON.parse(result[0].text).error).toBe(
      `request size of ${binary.body.length} bytes with ${n} BYTES elements (128 bytes each decoded) takes ${binary.body.length + n * 128} bytes, which exceeds the maximum allowed input size of ${MAX_INPUT} bytes. Use --http-max-input-size to increase the limit.`,
    );
    expect(result[1].status).toBe(400);
    expect(JSON.parse(result[1].text).error).toMatch(/^request size of \d+ bytes with 2000000 BYTES elements \(128 bytes each decoded\)/);
    // The bodies themselves (20 MB) and JSON.parse's array of 2 M strings; decoded they took ~600 MB.
    expect(grewMiB).toBeLessThan(160);
  }, 60_000);

  it('refuses a gRPC ModelInfer of 1 M empty bytes_contents entries (a 2 MB message) before protobufjs decodes it; RSS stays flat', async () => {
    const pid = child!.pid!;
    const n = 1_000_000;
    const request = { model_name: 'identity_bytes', id: 'amplify', inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, n], contents: { bytes_contents: new Array(n).fill(Buffer.alloc(0)) } }] };
    const { result: error, grewMiB } = await peakGrowth(pid, () => callError(client, 'ModelInfer', request));
    console.log(`gRPC: 1,000,000 empty bytes_contents: ${status[error.code]}; server RSS grew by ${grewMiB.toFixed(0)} MiB at most`);
    expect(error.code).toBe(status.INVALID_ARGUMENT);
    expect(error.details).toMatch(/^request message size of \d+ bytes takes at least \d+ bytes decoded .* exceeds the maximum allowed decoded message size of 67108864 bytes/);
    expect(grewMiB).toBeLessThan(64);
  }, 60_000);

  it('refuses a gRPC ModelInfer of 2.5 M one-byte BYTES elements in raw_input_contents (12.5 MB) before making them; RSS stays flat', async () => {
    const pid = child!.pid!;
    const n = 2_500_000;
    const raw = Buffer.alloc(5 * n);
    for (let i = 0; i < n; i++) {
      raw.writeUInt32LE(1, 5 * i);
      raw[5 * i + 4] = 0x61;
    }
    const request = { model_name: 'identity_bytes', inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, n] }], raw_input_contents: [raw] };
    const { result: error, grewMiB } = await peakGrowth(pid, () => callError(client, 'ModelInfer', request));
    console.log(`gRPC: 2,500,000 one-byte raw BYTES elements: ${status[error.code]}; server RSS grew by ${grewMiB.toFixed(0)} MiB at most`);
    expect(error.code).toBe(status.INVALID_ARGUMENT);
    expect(error.details).toMatch(/^request message size of \d+ bytes takes at least \d+ bytes decoded/);
    // The message itself (12.5 MB, in grpc-js's buffers and the budget's); decoded it took ~300 MB.
    expect(grewMiB).toBeLessThan(80);
  }, 60_000);

  it('answers such a request on a ModelStreamInfer stream with an error response by its id, and the stream goes on', async () => {
    const n = 1_000_000;
    const { stream, messages, done } = openInferStream(client);
    stream.write({ model_name: 'identity_bytes', id: 'amplify', inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, n], contents: { bytes_contents: new Array(n).fill(Buffer.alloc(0)) } }] });
    stream.write({ model_name: 'identity_bytes', id: 'fine', inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, 2], contents: { bytes_contents: [Buffer.from('a'), Buffer.from('b')] } }] });
    await until('both answers', () => messages.length === 2, 30_000);
    stream.end();
    await done;
    const refused = messages.find((m) => m.infer_response?.id === 'amplify')!;
    expect(refused.error_message).toMatch(/^request message size of \d+ bytes takes at least \d+ bytes decoded/);
    const fine = messages.find((m) => m.infer_response?.id === 'fine')!;
    expect(fine.error_message).toBe('');
    expect(fine.infer_response.outputs[0].name).toBe('OUTPUT0');
  }, 60_000);

  it('still answers a batch of 10,000 sentences at the defaults, over HTTP JSON and gRPC bytes_contents, and the server stays up', async () => {
    const answer = await post(httpPort, '/v2/models/identity_bytes/infer', jsonRequest(sentences));
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text).outputs[0].data).toEqual(sentences);
    const response = await call(client, 'ModelInfer', {
      model_name: 'identity_bytes',
      inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, sentences.length], contents: { bytes_contents: sentences.map((s) => Buffer.from(s)) } }],
    });
    expect(response.raw_output_contents[0].length).toBe(sentences.length * 104);
    // The same batch as raw contents (Triton's clients send BYTES so).
    const raw = Buffer.concat(sentences.map((s) => Buffer.concat([Buffer.from(Uint32Array.of(s.length).buffer), Buffer.from(s)])));
    const rawResponse = await call(client, 'ModelInfer', {
      model_name: 'identity_bytes',
      inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, sentences.length] }],
      raw_input_contents: [raw],
    });
    expect(Buffer.compare(rawResponse.raw_output_contents[0], raw)).toBe(0);
    const simple = await call(client, 'ModelInfer', {
      model_name: 'simple',
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], contents: { int_contents: new Array(16).fill(1) } },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], contents: { int_contents: new Array(16).fill(2) } },
      ],
    });
    expect(simple.outputs).toHaveLength(2);
  }, 60_000);
});

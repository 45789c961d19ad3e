import * as http from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { makeRepository, startTestServer } from './helpers/server';

// The HTTP front door keeps the JSON headers of binary requests it decoded, with their answers'
// headers (apps/gateway/src/http/header-cache.ts): a header sent again must give exactly the
// answers a first decoding gives, whatever the tensor bytes, shapes and encodings.

type Server = Awaited<ReturnType<typeof startTestServer>>;

function request(shape: number[], values: number[], extra: Record<string, unknown> = {}): { body: Buffer; headerLength: number } {
  const data = Buffer.from(Float32Array.from(values).buffer);
  const header = Buffer.from(
    JSON.stringify({
      ...extra,
      inputs: [{ name: 'INPUT0', shape, datatype: 'FP32', parameters: { binary_data_size: data.length } }],
      outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
    }),
  );
  return { body: Buffer.concat([header, data]), headerLength: header.length };
}

interface Answer {
  status: number;
  header: Record<string, unknown>;
  values: number[];
  headers: IncomingHttpHeaders;
}

/** node:http, not fetch: fetch always sends Accept-Encoding, and answers to it are never taken from the cache. */
function post(server: Server, body: Buffer, headers: Record<string, string>): Promise<{ status: number; headers: IncomingHttpHeaders; bytes: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${server.http}/v2/models/identity_fp32/infer`, { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, bytes: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function infer(server: Server, r: { body: Buffer; headerLength: number }, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await post(server, r.body, { 'inference-header-content-length': String(r.headerLength), ...headers });
  let bytes = res.bytes;
  if (res.headers['content-encoding'] === 'gzip') bytes = gunzipSync(bytes);
  if (res.status !== 200) return { status: res.status, header: JSON.parse(bytes.toString()), values: [], headers: res.headers };
  const length = Number(res.headers['inference-header-content-length']);
  const tail = Buffer.from(bytes.subarray(length));
  const values = Array.from(new Float32Array(tail.buffer, tail.byteOffset, tail.byteLength / 4));
  return { status: res.status, header: JSON.parse(bytes.subarray(0, length).toString()), values, headers: res.headers };
}

describe('HTTP binary requests with a JSON header sent again', () => {
  let server: Server;

  beforeAll(async () => {
    server = await startTestServer({ modelRepositories: [makeRepository({ identity_fp32: 'test/fixtures/onnx/identity_fp32' })] });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('answers each request with its own values and the right header, for the same header and for another shape', async () => {
    const expectedHeader = (shape: number[], id?: string) => ({
      ...(id ? { id } : {}),
      model_name: 'identity_fp32',
      model_version: '1',
      outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape, parameters: { binary_data_size: shape[0] * shape[1] * 4 } }],
    });
    for (let i = 0; i < 5; i++) {
      const a = await infer(server, request([1, 4], [i, i + 1, i + 2, i + 3]));
      expect(a.status).toBe(200);
      expect(a.header).toEqual(expectedHeader([1, 4]));
      expect(a.values).toEqual([i, i + 1, i + 2, i + 3]);
      expect(a.headers['content-length']).toBe(String(JSON.stringify(a.header).length + 16));
      expect(a.headers['x-content-type-options']).toBe('nosniff');
      const b = await infer(server, request([2, 3], [i, 1, 2, 3, 4, 5], { id: 'two' }));
      expect(b.header).toEqual(expectedHeader([2, 3], 'two'));
      expect(b.values).toEqual([i, 1, 2, 3, 4, 5]);
    }
  });

  it('compresses the answer to a header sent again when the client asks for it', async () => {
    const r = request([1, 2], [1, 2]);
    await infer(server, r);
    const plain = await infer(server, r);
    const gzip = await infer(server, r, { 'accept-encoding': 'gzip' });
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(gzip.header).toEqual(plain.header);
    expect(gzip.values).toEqual([1, 2]);
  });

  it("refuses a body longer or shorter than the header says, in Triton's words, after the same header was served", async () => {
    const good = request([1, 4], [1, 2, 3, 4]);
    expect((await infer(server, good)).status).toBe(200);
    const longer = { body: Buffer.concat([good.body, Buffer.alloc(4)]), headerLength: good.headerLength };
    const a = await infer(server, longer);
    expect(a.status).toBe(400);
    expect(a.header).toEqual({ error: "unexpected additional input data for model 'identity_fp32'" });
    const shorter = { body: good.body.subarray(0, good.body.length - 4), headerLength: good.headerLength };
    const b = await infer(server, shorter);
    expect(b.status).toBe(400);
    expect(String(b.header.error)).toContain("'INPUT0'");
  });
});

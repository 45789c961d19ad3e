import * as http from 'node:http';
import * as net from 'node:net';
import * as zlib from 'node:zlib';
import { makeRepository, startTestServer } from '../helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const LIMIT = 2 * 1024 * 1024;
const BUDGET = 3 * 1024 * 1024;

const request = Buffer.from(
  JSON.stringify({
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, (_, i) => i) },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, () => 1) },
    ],
  }),
);

/** The request above padded with spaces to `size` bytes (still valid JSON). */
const padded = (size: number): Buffer => Buffer.concat([request, Buffer.alloc(size - request.length, ' ')]);

function post(port: number, body: Buffer, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: '/v2/models/simple/infer', method: 'POST', agent: false, headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A request whose body stays half sent (it holds its whole declared length in the budget). */
function halfSent(port: number, body: Buffer): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(`POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
      socket.write(body.subarray(0, body.length >> 1));
      // Let the server read the headers and charge the body.
      setTimeout(() => resolve(socket), 200);
    });
    socket.on('error', reject);
  });
}

const budgetWords = `the server holds its limit of ${BUDGET} bytes of request bodies (--http-max-inflight-body-bytes); try again later`;

describe('HTTP body budget (issue 16, --http-max-inflight-body-bytes)', () => {
  let server: Server;
  let port: number;

  beforeAll(async () => {
    server = await startTestServer({
      modelRepositories: [makeRepository({ simple: 'models/simple' })],
      allowMetrics: false,
      httpMaxInputSize: LIMIT,
      httpMaxInflightBodyBytes: BUDGET,
      // Bodies wait for room up to half of it (1 s).
      httpRequestTimeoutSecs: 2,
    });
    port = server.httpPort;
  });

  afterAll(async () => {
    await server?.close();
  });

  it('refuses 64 concurrent gzip bombs within the budget (400 at the size limit or 503 at the budget), then serves', async () => {
    const member = zlib.gzipSync(Buffer.alloc(8 * 1024 * 1024), { level: 9 });
    const answers = await Promise.all(Array.from({ length: 64 }, () => post(port, member, { 'content-encoding': 'gzip' })));
    for (const a of answers) {
      if (a.status === 503) expect(JSON.parse(a.text)).toEqual({ error: budgetWords });
      else expect(a.status).toBe(400);
    }
    // With room for one bomb's limit and a half, most are refused at the budget.
    expect(answers.filter((a) => a.status === 503).length).toBeGreaterThan(0);
    const ok = await post(port, padded(LIMIT));
    expect(ok.status).toBe(200);
  });

  it('lets a declared body wait for room, and go on once an earlier body is released', async () => {
    const big = padded(LIMIT);
    const holder = await halfSent(port, big);
    let settled = false;
    const waiting = post(port, big).finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 300));
    // Two bodies of the limit do not fit a budget of one and a half: the second waits.
    expect(settled).toBe(false);
    holder.write(big.subarray(big.length >> 1));
    const [answer] = await Promise.all([waiting, new Promise((r) => holder.once('data', r))]);
    holder.destroy();
    expect(answer.status).toBe(200);
  });

  it('answers 503 in clear words when no room comes within the wait, and serves small bodies that fit', async () => {
    const big = padded(LIMIT);
    const holder = await halfSent(port, big);
    const small = await post(port, request);
    expect(small.status).toBe(200);
    const refused = await post(port, big);
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.text)).toEqual({ error: budgetWords });
    holder.destroy();
    await new Promise((r) => setTimeout(r, 100));
    expect((await post(port, big)).status).toBe(200);
  });

  it('charges a chunked body as it arrives: past the budget it is refused at once', async () => {
    const big = padded(LIMIT);
    const holder = await halfSent(port, big);
    const chunked = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port, path: '/v2/models/simple/infer', method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on('error', reject);
      for (let at = 0; at < big.length; at += 64 * 1024) req.write(big.subarray(at, at + 64 * 1024));
      req.end();
    });
    holder.destroy();
    expect(chunked.status).toBe(503);
    expect(JSON.parse(chunked.text)).toEqual({ error: budgetWords });
  });
});

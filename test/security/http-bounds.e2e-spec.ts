import * as http from 'node:http';
import * as net from 'node:net';
import * as zlib from 'node:zlib';
import { makeRepository, startTestServer } from '../helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const LIMIT = 2 * 1024 * 1024;

const request = Buffer.from(
  JSON.stringify({
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, (_, i) => i) },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, () => 1) },
    ],
  }),
);

/** ~1 MB of gzip that inflates to ~1 GB: concatenated members of 64 MiB of zeros each. */
function gzipBomb(): Buffer {
  const member = zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 9 });
  return Buffer.concat(Array.from({ length: Math.ceil((1024 * 1024) / member.length) }, () => member));
}

/** One request over an agent (keep-alive when the agent keeps sockets). */
function send(
  port: number,
  options: { path: string; method?: string; body?: Buffer; headers?: Record<string, string>; agent?: http.Agent },
): Promise<{ status: number; text: string; socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: options.path, method: options.method ?? 'GET', headers: options.headers, agent: options.agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString(), socket: req.socket! }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A raw socket, connected; `closed` settles with what the server wrote before closing it. */
function rawSocket(port: number): Promise<{ socket: net.Socket; closed: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString()));
    const closed = new Promise<string>((done) => socket.on('close', () => done(received)));
    socket.once('error', () => undefined);
    socket.once('connect', () => resolve({ socket, closed }));
    socket.once('error', reject);
  });
}

describe('HTTP resource bounds (issue 16, attacks 2 and 3)', () => {
  let server: Server;
  let port: number;

  beforeAll(async () => {
    const repo = makeRepository({ simple: 'models/simple' });
    server = await startTestServer({
      modelRepositories: [repo],
      httpMaxInputSize: LIMIT,
      // Room for every bomb up to the size limit: here each is refused in Triton's words, not at the budget.
      httpMaxInflightBodyBytes: 256 * 1024 * 1024,
      // 3 s: on a busy machine a bomb's 1 MB upload took more than 1 s to be read (408, not 400).
      httpRequestTimeoutSecs: 3,
      httpHeaderTimeoutSecs: 1,
    });
    port = server.httpPort;
  });

  afterAll(async () => {
    await server?.close();
  });

  it('refuses 64 concurrent 1 MB gzip bombs in Triton words, and still serves a gzip request', async () => {
    const bomb = gzipBomb();
    expect(bomb.length).toBeLessThan(LIMIT);
    const agent = new http.Agent({ keepAlive: false, maxSockets: 8 });
    const answers = await Promise.all(
      Array.from({ length: 64 }, () =>
        send(port, {
          path: '/v2/models/simple/infer',
          method: 'POST',
          body: bomb,
          headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
          agent,
        }),
      ),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text)).toEqual({
        error: `Decompressed data size exceeds the maximum allowed value of ${LIMIT} bytes. Use --http-max-input-size to increase the limit.`,
      });
    }
    agent.destroy();
    const ok = await send(port, {
      path: '/v2/models/simple/infer',
      method: 'POST',
      body: zlib.gzipSync(request),
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    });
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.text).outputs).toHaveLength(2);
  });

  it('closes a connection that sends half a body once the request timeout passes', async () => {
    const { socket, closed } = await rawSocket(port);
    socket.write(
      `POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${request.length}\r\n\r\n`,
    );
    socket.write(request.subarray(0, request.length >> 1));
    // Jest's timeout bounds the wait: without a request timeout Node keeps the socket 300 s.
    const answer = await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('closes a connection that never finishes its headers once the header timeout passes', async () => {
    const { socket, closed } = await rawSocket(port);
    socket.write('GET /v2/health/live HTTP/1.1\r\nHost: x\r\n');
    const answer = await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  });
});

describe('HTTP connection limit (issue 16)', () => {
  const MAX_CONNECTIONS = 4;
  let server: Server;
  let port: number;

  beforeAll(async () => {
    server = await startTestServer({ modelRepositories: [makeRepository({ simple: 'models/simple' })], httpMaxConnections: MAX_CONNECTIONS });
    port = server.httpPort;
  });

  afterAll(async () => {
    await server?.close();
  });

  it('closes connections beyond --http-max-connections while a connected client keeps being served', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const first = await send(port, { path: '/v2/health/live', agent });
    expect(first.status).toBe(200);
    // Fill the remaining slots with connections that each had one answer (so the server has surely counted them).
    const held: net.Socket[] = [];
    for (let i = 0; i < MAX_CONNECTIONS - 1; i++) {
      const other = await send(port, { path: '/v2/health/live', agent: new http.Agent({ keepAlive: true }) });
      expect(other.status).toBe(200);
      held.push(other.socket);
    }
    const { socket: extra, closed } = await rawSocket(port);
    extra.write('GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(await closed).toBe('');
    const again = await send(port, {
      path: '/v2/models/simple/infer',
      method: 'POST',
      body: request,
      headers: { 'content-type': 'application/json' },
      agent,
    });
    expect(again.status).toBe(200);
    expect(again.socket).toBe(first.socket);
    for (const s of held) s.destroy();
    agent.destroy();
  });
});

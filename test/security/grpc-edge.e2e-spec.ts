/**
 * The gRPC port's resource holes of issue 16 (audit probes probe-fds.js and probe-grpc.js):
 * 1. silent TCP connections to the gRPC port were not counted in the connection limit: under
 *    `ulimit -n 1024`, 1,100 of them made HTTP refuse and then killed node (EMFILE thrown from a
 *    timer). The built server (`npm run build` first) runs here under `ulimit -n 256`.
 * 2. a gzip-compressed message was charged at its compressed length and inflated outside the body
 *    budget: 8 gzip calls of 48 MiB all ran against a budget of 1 MiB, RSS 134 -> 1,457 MB.
 * 3. a message whose prefix announced 512 MiB and whose bytes never came held the budget until its
 *    client left: every 256 KiB request was refused meanwhile.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import * as zlib from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { call, inferenceClient, type Client, type Msg } from '../helpers/grpc-client';
import { holdBudget } from '../helpers/budget-holder';
import { freePort, MAIN } from '../helpers/built-server';
import { until } from '../helpers/poll';
import { makeRepository, startTestServer } from '../helpers/server';
import { loadServices } from '../../apps/gateway/src/grpc/proto-loader';
import { timeoutDetails } from '../../apps/gateway/src/grpc/message-budget';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const MiB = 1024 * 1024;

const services = loadServices();
const serializeInfer = services.inference.ModelInfer.requestSerialize as (m: Msg) => Buffer;

/** A ModelInfer request of `bytes` of FP32 zeros through identity_fp32. */
function fp32(bytes: number): Msg {
  return {
    model_name: 'identity_fp32',
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: ['1', String(bytes / 4)] }],
    raw_input_contents: [Buffer.alloc(bytes)],
  };
}

/** One gRPC frame: flag byte, big-endian length, the message. */
function frame(message: Buffer, compressed: boolean): Buffer {
  const prefix = Buffer.alloc(5);
  prefix[0] = compressed ? 1 : 0;
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

interface RawAnswer {
  status?: string;
  message?: string;
}

/** A raw HTTP/2 ModelInfer call: writes `data` (and ends the stream unless `hold`); settles with its grpc-status and grpc-message once they come (or the stream closes). */
function rawCall(session: http2.ClientHttp2Session, data: Buffer, options: { encoding?: string; hold?: boolean } = {}): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const stream = session.request({
      ':method': 'POST',
      ':path': '/inference.GRPCInferenceService/ModelInfer',
      'content-type': 'application/grpc',
      te: 'trailers',
      ...(options.encoding ? { 'grpc-encoding': options.encoding } : {}),
    });
    const answer: RawAnswer = {};
    const take = (h: http2.IncomingHttpHeaders): void => {
      if (h['grpc-message'] !== undefined) answer.message = decodeURIComponent(String(h['grpc-message']));
      if (h['grpc-status'] === undefined) return;
      answer.status = String(h['grpc-status']);
      resolve(answer);
    };
    stream.on('response', take);
    stream.on('trailers', take);
    stream.on('error', () => undefined);
    stream.resume();
    stream.on('close', () => resolve(answer));
    if (options.hold) stream.write(data);
    else stream.end(data);
  });
}

/** An HTTP infer of `bytes` of FP32 (binary extension): its status. */
async function httpInfer(port: number, bytes: number): Promise<number> {
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, bytes / 4], parameters: { binary_data_size: bytes } }],
      outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
    }),
  );
  const r = await fetch(`http://127.0.0.1:${port}/v2/models/identity_fp32/infer`, {
    method: 'POST',
    headers: { 'inference-header-content-length': String(header.length) },
    body: Buffer.concat([header, Buffer.alloc(bytes)]),
  });
  await r.arrayBuffer();
  return r.status;
}

/** The budget's words for a request refused for want of room. */
function words(budget: number): string {
  return `the server holds its limit of ${budget} bytes of request bodies (--http-max-inflight-body-bytes); try again later`;
}

async function embedded(options: Partial<Parameters<typeof startTestServer>[0]>): Promise<Server> {
  return startTestServer({
    modelRepositories: [makeRepository({ identity_fp32: 'test/fixtures/onnx/identity_fp32' })],
    allowMetrics: false,
    httpPort: await freePort(),
    grpcPort: await freePort(),
    ...options,
  });
}

describe('gRPC compressed messages in the body budget (issue 16)', () => {
  const BUDGET = MiB;
  let server: Server;
  let client: Client;

  beforeAll(async () => {
    server = await embedded({ httpMaxInflightBodyBytes: BUDGET });
    client = inferenceClient(server.grpcPort);
  });

  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it('answers gzip and deflate requests from a client that compresses (tritonclient compression_algorithm)', async () => {
    for (const algorithm of [2, 1]) {
      // A client whose every request is compressed (grpc.default_compression_algorithm: 1 deflate, 2 gzip).
      const ServiceClient = Object.getPrototypeOf(client).constructor as new (address: string, credentials: grpc.ChannelCredentials, options: object) => Client;
      const zipped = new ServiceClient(
        `127.0.0.1:${server.grpcPort}`,
        grpc.credentials.createInsecure(),
        { 'grpc.default_compression_algorithm': algorithm, 'grpc.max_receive_message_length': -1 },
      );
      try {
        const data = Buffer.alloc(512 * 1024);
        for (let i = 0; i < data.length; i += 4) data.writeFloatLE(i / 4, i);
        const answer = await call(zipped, 'ModelInfer', { ...fp32(data.length), raw_input_contents: [data] });
        expect(Buffer.from(answer.raw_output_contents[0]).equals(data)).toBe(true);
      } finally {
        zipped.close();
      }
    }
  });

  it('refuses 8 concurrent gzip messages that inflate to 48 MiB each at the budget, RESOURCE_EXHAUSTED, without inflating them', async () => {
    const gz = frame(zlib.gzipSync(serializeInfer(fp32(48 * MiB))), true);
    // Each is charged 48 KiB at its prefix: 8 of them fit in the room the holder leaves.
    expect(gz.length * 8).toBeLessThan(BUDGET / 2);
    // Half the budget held by an HTTP body under way, so that no message is ever alone in the budget
    // (one alone may exceed it, compressed or not).
    const holder = await holdBudget(server.httpPort, BUDGET / 2, 'identity_fp32');
    const before = process.memoryUsage.rss();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 5);
    const session = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
    try {
      // Streams the client never half-closes: their refusal must give their charges back all the same.
      const answers = await Promise.all(Array.from({ length: 8 }, () => rawCall(session, gz, { encoding: 'gzip', hold: true })));
      // Before: 8 of 8 answered, each inflated whole outside the budget.
      expect(answers).toEqual(Array.from({ length: 8 }, () => ({ status: String(grpc.status.RESOURCE_EXHAUSTED), message: words(BUDGET) })));
      clearInterval(sampler);
      // 8 x 48 MiB inflated would be 384 MiB (and their concatenation as much again).
      expect((peak - before) / MiB).toBeLessThan(64);
      holder.destroy();
      // The budget was given back while the refused streams stay open: a request of the whole budget goes through.
      await until('the budget to be free', () => call(client, 'ModelInfer', fp32(BUDGET)).then(() => true, () => false), 3000);
    } finally {
      clearInterval(sampler);
      session.destroy();
      holder.destroy();
    }
  });

  it('refuses a compressed message that inflates past the largest message received', async () => {
    const small = await embedded({ httpMaxInputSize: 4 * MiB });
    const session = http2.connect(`http://127.0.0.1:${small.grpcPort}`);
    try {
      const answer = await rawCall(session, frame(zlib.gzipSync(serializeInfer(fp32(8 * MiB))), true), { encoding: 'gzip' });
      expect(answer).toEqual({ status: String(grpc.status.RESOURCE_EXHAUSTED), message: `Received message that decompresses to a size larger than ${4 * MiB}` });
      const deflated = await rawCall(session, frame(zlib.deflateSync(serializeInfer(fp32(MiB))), true), { encoding: 'deflate' });
      expect(deflated.status).toBe('0');
    } finally {
      session.destroy();
      await small.close();
    }
  });
});

describe('a gRPC message that never finishes arriving (issue 16)', () => {
  let server: Server;
  let client: Client;
  const TIMEOUT_SECS = 2;

  beforeAll(async () => {
    server = await embedded({ httpRequestTimeoutSecs: TIMEOUT_SECS, httpMaxInputSize: 64 * MiB, httpMaxInflightBodyBytes: 32 * MiB });
    client = inferenceClient(server.grpcPort);
  });

  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it('refuses a prefix announcing more than the largest message received at once, holding nothing', async () => {
    const session = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
    try {
      const prefix = Buffer.alloc(5);
      prefix.writeUInt32BE(512 * MiB, 1);
      const started = Date.now();
      const answer = await rawCall(session, prefix, { hold: true });
      expect(answer.status).toBe(String(grpc.status.RESOURCE_EXHAUSTED));
      expect(Date.now() - started).toBeLessThan(TIMEOUT_SECS * 1000);
      expect(await httpInfer(server.httpPort, 256 * 1024)).toBe(200);
    } finally {
      session.destroy();
    }
  });

  it('ends a call whose message stops halfway once the request timeout passes, and gives its budget back', async () => {
    const session = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
    try {
      // 30 MiB announced, 1 KiB sent: the charge is taken at the prefix.
      const prefix = Buffer.alloc(5);
      prefix.writeUInt32BE(30 * MiB, 1);
      const held = rawCall(session, Buffer.concat([prefix, Buffer.alloc(1024)]), { hold: true });
      const started = Date.now();
      await new Promise((r) => setTimeout(r, 200));
      // Meanwhile the budget is held: larger requests are refused.
      await expect(call(client, 'ModelInfer', fp32(4 * MiB))).rejects.toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED });
      expect(await held).toEqual({ status: String(grpc.status.DEADLINE_EXCEEDED), message: timeoutDetails(TIMEOUT_SECS * 1000) });
      const ended = Date.now() - started;
      expect(ended).toBeGreaterThan(TIMEOUT_SECS * 1000 - 500);
      expect(ended).toBeLessThan(TIMEOUT_SECS * 1000 + 2000);
      // Given back: both doors take requests again (before, still refused 15 s later, until the holder left).
      expect((await call(client, 'ModelInfer', fp32(4 * MiB))).outputs[0].name).toBe('OUTPUT0');
      expect(await httpInfer(server.httpPort, 4 * MiB)).toBe(200);
    } finally {
      session.destroy();
    }
  });
});

describe('silent connections to the gRPC port (issue 16, built server under ulimit -n 256)', () => {
  const FD_LIMIT = 256;
  const CAP = Math.floor((FD_LIMIT * 3) / 4);
  const HEADER_TIMEOUT_SECS = 5;
  let child: ChildProcess;
  let exited: Promise<number | null>;
  let httpPort: number;
  let grpcPort: number;

  beforeAll(async () => {
    [httpPort, grpcPort] = [await freePort(), await freePort()];
    const repo = makeRepository({ identity_fp32: 'test/fixtures/onnx/identity_fp32' });
    const args = ['serve', '--model-repository', repo, '--http-address', '127.0.0.1', '--grpc-address', '127.0.0.1'];
    args.push('--http-port', String(httpPort), '--grpc-port', String(grpcPort), '--allow-metrics', 'false', '--http-header-timeout-secs', String(HEADER_TIMEOUT_SECS));
    child = spawn('sh', ['-c', `ulimit -n ${FD_LIMIT} && exec "$0" "$@"`, process.execPath, MAIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    await until(
      'the server',
      async () => {
        if (child.exitCode !== null) throw new Error(`the server exited: ${stderr}`);
        return fetch(`http://127.0.0.1:${httpPort}/v2/health/ready`).then((r) => r.status === 200, () => false);
      },
      60_000,
    );
  }, 90_000);

  afterAll(async () => {
    child?.kill('SIGKILL');
    await exited;
  });

  it('keeps connections within the one budget (new clients take silent ones\' places), closes silent ones after the header timeout, serves connected and new clients, and stays up', async () => {
    // Clients connected before the flood: an HTTP keep-alive connection and a gRPC channel.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const live = (): Promise<number> =>
      new Promise((resolve, reject) => {
        http.get({ host: '127.0.0.1', port: httpPort, path: '/v2/health/live', agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        }).on('error', reject);
      });
    const client = inferenceClient(grpcPort);
    expect(await live()).toBe(200);
    expect((await call(client, 'ModelInfer', fp32(1024))).outputs[0].name).toBe('OUTPUT0');

    // 300 connections that never send a byte (the audit sent 1,100 against a limit of 1024).
    const sockets: net.Socket[] = [];
    let closedEarly = 0;
    for (let i = 0; i < 300; i++) {
      const s = net.connect(grpcPort, '127.0.0.1');
      s.on('error', () => undefined);
      s.on('close', () => closedEarly++);
      sockets.push(s);
    }
    await new Promise((r) => setTimeout(r, 500));
    const open = sockets.filter((s) => !s.destroyed).length;
    // Within the budget (three quarters of 256, the two good clients' connections among them).
    expect(open).toBeLessThanOrEqual(CAP - 2);
    expect(closedEarly).toBeGreaterThanOrEqual(300 - (CAP - 2));

    // While the silent ones are held: the connected clients are served, and new ones too (each takes
    // the place of the oldest silent connection); the server lives.
    const fresh = inferenceClient(grpcPort);
    try {
      for (let i = 0; i < 3; i++) {
        expect(await live()).toBe(200);
        expect((await call(client, 'ModelInfer', fp32(1024))).outputs[0].name).toBe('OUTPUT0');
        expect((await call(fresh, 'ModelInfer', fp32(1024))).outputs[0].name).toBe('OUTPUT0');
        expect((await fetch(`http://127.0.0.1:${httpPort}/v2/health/live`)).status).toBe(200);
      }
      expect(sockets.filter((s) => !s.destroyed).length).toBeGreaterThan(CAP / 2);
      expect(child.exitCode).toBeNull();
      // The silent ones are closed by the server once the header timeout passes.
      await until('the silent connections to be closed', () => sockets.every((s) => s.destroyed), HEADER_TIMEOUT_SECS * 1000 + 4000);
      expect((await call(fresh, 'ModelInfer', fp32(1024))).outputs[0].name).toBe('OUTPUT0');
    } finally {
      fresh.close();
      client.close();
      agent.destroy();
    }
    expect(child.exitCode).toBeNull();
  }, 60_000);
});

/**
 * Graceful shutdown of the built CLI (`npm run build` first), signalled the way Ctrl-C and systemd
 * do it: SIGTERM to the server's whole process group. Requests in flight — on a slow python model,
 * whose stub sits in that group's reach, and on an ONNX model — are all answered; readiness turns
 * false while they are; the listener refuses new connections; keep-alive connections are closed
 * after their answer; the process exits 0 long before the exit timeout.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { loopbackPorts, MAIN } from '../helpers/built-server';
import { call, inferenceClient, type Msg } from '../helpers/grpc-client';
import { ROOT } from '../helpers/server';

const EXIT_TIMEOUT_SECS = 30;
const PYTHON_SLEEP_SECS = 1;

const SLOW_CONFIG = `name: "drain_slow"
backend: "python"
max_batch_size: 16
dynamic_batching { max_queue_delay_microseconds: 200000 }
input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`;

const SLOW_MODEL = `import time
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        time.sleep(${PYTHON_SLEEP_SECS})
        return [
            pb_utils.InferenceResponse([pb_utils.Tensor("Y", 2 * pb_utils.get_input_tensor_by_name(r, "X").as_numpy())])
            for r in requests
        ]
`;

function makeRepo(): string {
  const repo = mkdtempSync(path.join(tmpdir(), 'nereid-shutdown-'));
  mkdirSync(path.join(repo, 'drain_slow/1'), { recursive: true });
  writeFileSync(path.join(repo, 'drain_slow/config.pbtxt'), SLOW_CONFIG);
  writeFileSync(path.join(repo, 'drain_slow/1/model.py'), SLOW_MODEL);
  cpSync(path.join(ROOT, 'test/fixtures/onnx/identity_fp32'), path.join(repo, 'identity_fp32'), { recursive: true });
  return repo;
}

interface Answer {
  status: number;
  connection: string | undefined;
  body: string;
}

function collect(req: http.ClientRequest): Promise<Answer> {
  return new Promise((resolve, reject) => {
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body }));
    });
    req.on('error', reject);
  });
}

function get(port: number, route: string): Promise<Answer> {
  return collect(http.get({ host: '127.0.0.1', port, path: route, agent: false }));
}

async function waitReady(port: number, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    const r = await get(port, '/v2/health/ready').catch(() => undefined);
    if (r?.status === 200) return;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error('server not ready in 30 s');
}

/** Polls until a new connection is refused (the listener is closed). */
async function waitRefused(port: number): Promise<string> {
  const deadline = Date.now() + 10000;
  while (Date.now() < deadline) {
    const code = await new Promise<string>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve('connected');
      });
      s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    });
    if (code !== 'connected') return code;
    await new Promise((res) => setTimeout(res, 50));
  }
  return 'still accepting';
}

/** An infer request whose headers and first half of the body are sent; `finish()` sends the rest. */
function partialInfer(agent: http.Agent, port: number, model: string, body: string): { answer: Promise<Answer>; finish: () => void } {
  const bytes = Buffer.from(body);
  const half = bytes.length >> 1;
  const req = http.request({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: `/v2/models/${model}/infer`,
    agent,
    headers: { 'content-type': 'application/json', 'content-length': bytes.length },
  });
  const answer = collect(req);
  req.write(bytes.subarray(0, half));
  return { answer, finish: () => req.end(bytes.subarray(half)) };
}

function infer(agent: http.Agent, port: number, model: string, body: string): Promise<Answer> {
  const r = partialInfer(agent, port, model, body);
  r.finish();
  return r.answer;
}

describe('graceful shutdown on SIGTERM to the process group (built CLI)', () => {
  let repo: string;
  let child: ChildProcess | undefined;

  beforeAll(() => {
    repo = makeRepo();
  });

  afterAll(() => {
    if (child?.exitCode === null && child.pid) process.kill(-child.pid, 'SIGKILL');
    rmSync(repo, { recursive: true, force: true });
  });

  it('answers every in-flight request, turns not-ready, refuses new connections and exits 0', async () => {
    const { http: port, args } = await loopbackPorts();
    const proc = spawn(process.execPath, [MAIN, 'serve', '--model-repository', repo, ...args, '--exit-timeout-secs', String(EXIT_TIMEOUT_SECS)], {
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child = proc;
    let stderr = '';
    proc.stderr?.setEncoding('utf8');
    proc.stderr?.on('data', (d: string) => (stderr += d));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      proc.once('exit', (code, signal) => resolve({ code, signal })),
    );
    await waitReady(port, proc);

    const grpcPort = Number(args[args.indexOf('--grpc-port') + 1]);
    const grpc = inferenceClient(grpcPort);
    expect((await call(grpc, 'ServerReady', {})).ready).toBe(true);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    const onnxBody = JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }] });
    const pyBody = JSON.stringify({ inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }] });
    // Keep-alive connections that have served a request already.
    const warm = await Promise.all([0, 1, 2, 3].map(() => infer(agent, port, 'identity_fp32', onnxBody)));
    expect(warm.map((a) => a.status)).toEqual([200, 200, 200, 200]);

    // In flight at the signal: 8 python requests executing, 4 ONNX requests and a readiness probe
    // whose bodies / headers are not complete yet.
    const python = [0, 1, 2, 3, 4, 5, 6, 7].map(() => infer(agent, port, 'drain_slow', pyBody));
    const grpcPython = [0, 1, 2, 3].map(() =>
      call(grpc, 'ModelInfer', {
        model_name: 'drain_slow',
        inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 4], contents: { fp32_contents: [1, 2, 3, 4] } }],
      }),
    );
    const onnx = [0, 1, 2, 3].map(() => partialInfer(agent, port, 'identity_fp32', onnxBody));
    const probe = net.connect(port, '127.0.0.1');
    let probeText = '';
    probe.setEncoding('utf8');
    probe.on('data', (d: string) => (probeText += d));
    const probeClosed = new Promise<void>((resolve) => probe.once('close', () => resolve()));
    probe.write('GET /v2/health/ready HTTP/1.1\r\nHost: nereid\r\n');
    await new Promise((res) => setTimeout(res, 500)); // the python batch is executing by now

    const signalled = Date.now();
    process.kill(-proc.pid!, 'SIGTERM');
    expect(await waitRefused(port)).toBe('ECONNREFUSED');

    probe.write('\r\n');
    for (const r of onnx) r.finish();
    const onnxAnswers = await Promise.all(onnx.map((r) => r.answer));
    const pythonAnswers = await Promise.all(python);
    const grpcAnswers = await Promise.all(grpcPython);
    await probeClosed;
    const { code, signal } = await exited;
    const took = Date.now() - signalled;
    agent.destroy();
    grpc.close();

    for (const a of onnxAnswers) {
      expect(a.status).toBe(200);
      expect(a.connection).toBe('close');
      expect(JSON.parse(a.body).outputs[0].data).toEqual([1, 2, 3, 4]);
    }
    for (const a of pythonAnswers) {
      expect(a.status).toBe(200);
      expect(a.connection).toBe('close');
      expect(JSON.parse(a.body).outputs[0].data).toEqual([2, 4, 6, 8]);
    }
    for (const m of grpcAnswers as Msg[]) {
      const y = m.raw_output_contents[0] as Buffer;
      expect([0, 1, 2, 3].map((i) => y.readFloatLE(i * 4))).toEqual([2, 4, 6, 8]);
    }
    // Not ready (Triton's 400) while the process was still draining, and the connection closed after it.
    expect(probeText).toMatch(/^HTTP\/1\.1 400 /);
    expect(probeText.toLowerCase()).toContain('connection: close');
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(took).toBeLessThan((EXIT_TIMEOUT_SECS * 1000) / 2);
    expect(stderr).toContain('SIGTERM received');
  });
});

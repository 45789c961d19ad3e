/**
 * Graceful shutdown of the built CLI (`npm run build` first), signalled the way Ctrl-C and systemd
 * do it: SIGTERM to the server's whole process group. Requests in flight — on a slow python model,
 * whose stub sits in that group's reach, and on an ONNX model — are all answered; readiness turns
 * false while they are; the listener refuses new connections; keep-alive connections are closed
 * after their answer (an open gRPC channel gets GOAWAY: its new calls fail UNAVAILABLE while its
 * in-flight calls are answered); the process exits 0 long before the exit timeout. When requests
 * outlive `--exit-timeout-secs`, the process exits at the timeout with Triton's code (1) and
 * words (`Exit timeout expired. Exiting immediately.`), and those requests see their connection
 * close.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { loopbackPorts, MAIN } from '../helpers/built-server';
import { status, type ServiceError } from '@grpc/grpc-js';
import { call, inferenceClient, type Msg } from '../helpers/grpc-client';
import { until } from '../helpers/poll';
import { ROOT } from '../helpers/server';

const EXIT_TIMEOUT_SECS = 30;
const PYTHON_SLEEP_SECS = 2;
/** For the exit timeout running out: a model that sleeps far longer than it. */
const SHORT_EXIT_TIMEOUT_SECS = 2;
const STUCK_SLEEP_SECS = 15;

function slowConfig(name: string): string {
  return `name: "${name}"
backend: "python"
max_batch_size: 16
dynamic_batching { max_queue_delay_microseconds: 200000 }
input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`;
}

function slowModel(sleepSecs: number): string {
  return `import time
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        time.sleep(${sleepSecs})
        return [
            pb_utils.InferenceResponse([pb_utils.Tensor("Y", 2 * pb_utils.get_input_tensor_by_name(r, "X").as_numpy())])
            for r in requests
        ]
`;
}

/** A repository of python models that sleep (name -> seconds), and identity_fp32 (ONNX). */
function makeRepo(slow: Record<string, number>): string {
  const repo = mkdtempSync(path.join(tmpdir(), 'nereid-shutdown-'));
  for (const [name, secs] of Object.entries(slow)) {
    mkdirSync(path.join(repo, name, '1'), { recursive: true });
    writeFileSync(path.join(repo, name, 'config.pbtxt'), slowConfig(name));
    writeFileSync(path.join(repo, name, '1/model.py'), slowModel(secs));
  }
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

interface Running {
  proc: ChildProcess;
  port: number;
  grpcPort: number;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const started: ChildProcess[] = [];
const repos: string[] = [];

/** The built CLI on `repo` in a process group of its own (as a shell or systemd starts it), once ready. */
async function startServer(repo: string, exitTimeoutSecs: number): Promise<Running> {
  const { http: port, args } = await loopbackPorts();
  const proc = spawn(process.execPath, [MAIN, 'serve', '--model-repository', repo, ...args, '--exit-timeout-secs', String(exitTimeoutSecs)], {
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  started.push(proc);
  let stderr = '';
  proc.stderr?.setEncoding('utf8');
  proc.stderr?.on('data', (d: string) => (stderr += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  await waitReady(port, proc);
  return { proc, port, grpcPort: Number(args[args.indexOf('--grpc-port') + 1]), stderr: () => stderr, exited };
}

const pyBody = JSON.stringify({ inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }] });
const pyRequest = (model: string): Msg => ({
  model_name: model,
  inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 4], contents: { fp32_contents: [1, 2, 3, 4] } }],
});

describe('graceful shutdown on SIGTERM to the process group (built CLI)', () => {
  afterAll(() => {
    // The whole group: a python stub left behind by a server that exited is in it too.
    for (const proc of started) {
      try {
        process.kill(-proc.pid!, 'SIGKILL');
      } catch {
        // the group is gone
      }
    }
    for (const repo of repos) rmSync(repo, { recursive: true, force: true });
  });

  it('answers every in-flight request, turns not-ready, refuses new connections and calls, and exits 0', async () => {
    const repo = makeRepo({ drain_slow: PYTHON_SLEEP_SECS });
    repos.push(repo);
    const { proc, port, grpcPort, stderr, exited } = await startServer(repo, EXIT_TIMEOUT_SECS);
    const grpc = inferenceClient(grpcPort);
    expect((await call(grpc, 'ServerReady', {})).ready).toBe(true);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    const onnxBody = JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }] });
    // Keep-alive connections that have served a request already.
    const warm = await Promise.all([0, 1, 2, 3].map(() => infer(agent, port, 'identity_fp32', onnxBody)));
    expect(warm.map((a) => a.status)).toEqual([200, 200, 200, 200]);

    // In flight at the signal: 8 python requests executing, 4 ONNX requests and a readiness probe
    // whose bodies / headers are not complete yet.
    const python = [0, 1, 2, 3, 4, 5, 6, 7].map(() => infer(agent, port, 'drain_slow', pyBody));
    const grpcPython = [0, 1, 2, 3].map(() => call(grpc, 'ModelInfer', pyRequest('drain_slow')));
    let grpcAnswered = false;
    void Promise.all(grpcPython).then(() => (grpcAnswered = true), () => undefined);
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
    // The open gRPC channel got GOAWAY: a new call on it fails UNAVAILABLE (Triton: UNAVAILABLE, 'GRPC
    // server is shutting down and has stopped accepting new requests.') while its in-flight calls run on.
    const late = await call(grpc, 'ServerLive', {}).then(() => undefined, (e: ServiceError) => e);
    expect(grpcAnswered).toBe(false);
    expect(late?.code).toBe(status.UNAVAILABLE);

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
    expect(stderr()).toContain('SIGTERM received');
  });

  it("exits at --exit-timeout-secs with Triton's code (1) and words when a request outlives it; the request's connection closes", async () => {
    const repo = makeRepo({ drain_stuck: STUCK_SLEEP_SECS });
    repos.push(repo);
    const { proc, port, grpcPort, stderr, exited } = await startServer(repo, SHORT_EXIT_TIMEOUT_SECS);
    const grpc = inferenceClient(grpcPort);
    const agent = new http.Agent({ keepAlive: true });
    const httpAnswer = infer(agent, port, 'drain_stuck', pyBody).then(
      (a) => a,
      (e: Error) => e,
    );
    const grpcAnswer = call(grpc, 'ModelInfer', pyRequest('drain_stuck')).then(
      (m) => m,
      (e: ServiceError) => e,
    );
    await new Promise((res) => setTimeout(res, 700)); // executing by now

    const signalled = Date.now();
    process.kill(-proc.pid!, 'SIGTERM');
    const { code, signal } = await exited;
    const took = Date.now() - signalled;
    const [h, g] = [await httpAnswer, await grpcAnswer];
    agent.destroy();
    grpc.close();

    expect({ code, signal }).toEqual({ code: 1, signal: null });
    expect(took).toBeGreaterThanOrEqual(SHORT_EXIT_TIMEOUT_SECS * 1000 - 100);
    expect(took).toBeLessThan(SHORT_EXIT_TIMEOUT_SECS * 1000 + 3000);
    expect(stderr()).toContain('SIGTERM received, draining (up to 2s)');
    expect(stderr()).toContain('failed to stop server: Exit timeout expired. Exiting immediately.');
    // No answer: the connection closed under the HTTP request, the gRPC call failed UNAVAILABLE.
    expect(h).toMatchObject({ code: 'ECONNRESET', message: 'socket hang up' });
    expect(g).toMatchObject({ code: status.UNAVAILABLE, details: 'Connection dropped' });
    // The python stub still executing did not outlive the server (give it a moment to notice).
    await until('no process left in the group', () => spawnSync('pgrep', ['-g', String(proc.pid)]).status === 1, 5000);
  });
});

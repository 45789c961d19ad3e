/**
 * Distributed mode (issue 13): real processes of the built CLI (`npm run build` first) over a
 * private redis-server: two gateways, one scheduler, two workers. Infers `simple` over HTTP and gRPC
 * through both gateways, checks that the scheduler batches requests of both gateways together
 * (the workers' batch statistics), that a gateway-only process loaded neither onnxruntime nor
 * python, and what happens when workers die (kill -9): their batches run again on a live worker,
 * or fail UNAVAILABLE when none is left, and a new worker is used without restarting anything.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { roleReady, startRole, stopCluster, type RoleProcess } from './helpers/cluster-roles';
import { call, inferenceClient, type Client, type Msg } from './helpers/grpc-client';
import { startRedis, type RedisServer } from './helpers/redis-server';
import { ROOT } from './helpers/server';

jest.setTimeout(120_000);

let redis: RedisServer;
let repo: string;
const roles: RoleProcess[] = [];
let gateways: RoleProcess[];
let worker: RoleProcess;
/** A second worker, killed mid-batch by one test. */
let spare: RoleProcess;
let scheduler: RoleProcess;
let grpcClient: Client;

async function start(role: string): Promise<RoleProcess> {
  const r = await startRole(role, redis.url, repo);
  roles.push(r);
  return r;
}

const range = (n: number, f: (i: number) => number): number[] => Array.from({ length: n }, (_, i) => f(i));

async function inferHttp(r: RoleProcess, base: number): Promise<Msg> {
  const res = await fetch(`http://127.0.0.1:${r.http}/v2/models/simple/infer`, {
    method: 'POST',
    body: JSON.stringify({
      id: `h${base}`,
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: range(16, (i) => base + i) },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: range(16, (i) => i) },
      ],
    }),
  });
  const body = (await res.json()) as Msg;
  expect(res.status).toBe(200);
  return body;
}

function expectHttpAnswer(body: Msg, base: number): void {
  expect(body.id).toBe(`h${base}`);
  expect(body.model_name).toBe('simple');
  expect(body.model_version).toBe('1');
  const byName = new Map((body.outputs as Msg[]).map((o) => [o.name, o]));
  expect(byName.get('OUTPUT0')!.data).toEqual(range(16, (i) => base + 2 * i));
  expect(byName.get('OUTPUT1')!.data).toEqual(range(16, () => base));
}

beforeAll(async () => {
  redis = await startRedis();
  // `simple` with a queue delay, so that requests arriving together through both gateways batch.
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-distributed-'));
  fs.cpSync(path.join(ROOT, 'models/simple'), path.join(repo, 'simple'), { recursive: true });
  fs.appendFileSync(
    path.join(repo, 'simple/config.pbtxt'),
    '\ninstance_group [{ kind: KIND_CPU, count: 1 }]\ndynamic_batching { max_queue_delay_microseconds: 100000 }\n',
  );
  // slow_scale (python, 100 ms per execution): batches that are still running when a worker dies.
  fs.cpSync(path.join(ROOT, 'test/fixtures/python/slow_scale'), path.join(repo, 'slow_scale'), { recursive: true });
  worker = await start('worker');
  spare = await start('worker');
  scheduler = await start('scheduler');
  gateways = [await start('gateway'), await start('gateway')];
  await Promise.all([worker, spare, ...gateways].map((r) => roleReady(r)));
  grpcClient = inferenceClient(gateways[1].grpc);
});

afterAll(async () => {
  grpcClient?.close();
  await stopCluster(roles, redis, repo);
});

describe('distributed mode: 2 gateways, 1 scheduler, 2 workers over Redis', () => {
  it('answers HTTP inference through either gateway', async () => {
    expectHttpAnswer(await inferHttp(gateways[0], 100), 100);
    expectHttpAnswer(await inferHttp(gateways[1], 200), 200);
  });

  it('answers gRPC inference through a gateway', async () => {
    const int32 = (v: number[]): Buffer => Buffer.from(new Int32Array(v).buffer);
    const res = await call(grpcClient, 'ModelInfer', {
      model_name: 'simple',
      id: 'g1',
      inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16] })),
      raw_input_contents: [int32(range(16, (i) => 7 + i)), int32(range(16, (i) => i))],
    });
    expect(res.id).toBe('g1');
    expect(res.model_version).toBe('1');
    const outputs = (res.raw_output_contents as Buffer[]).map((b) => Array.from(new Int32Array(new Uint8Array(b).buffer)));
    expect(res.outputs.map((o: Msg) => o.name)).toEqual(['OUTPUT0', 'OUTPUT1']);
    expect(outputs[0]).toEqual(range(16, (i) => 7 + 2 * i));
    expect(outputs[1]).toEqual(range(16, () => 7));
  });

  it('serves metadata and config from the cluster, and errors as the embedded server does', async () => {
    const meta = (await (await fetch(`http://127.0.0.1:${gateways[0].http}/v2/models/simple`)).json()) as Msg;
    expect(meta.inputs.map((i: Msg) => [i.name, i.datatype, i.shape])).toEqual([
      ['INPUT0', 'INT32', [-1, 16]],
      ['INPUT1', 'INT32', [-1, 16]],
    ]);
    const config = (await (await fetch(`http://127.0.0.1:${gateways[0].http}/v2/models/simple/config`)).json()) as Msg;
    expect(Number(config.dynamic_batching.max_queue_delay_microseconds)).toBe(100000);
    // Validation happens at the gateway, with the embedded server's words.
    const bad = await fetch(`http://127.0.0.1:${gateways[0].http}/v2/models/simple/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: range(16, (i) => i) }] }),
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as Msg).error).toMatch(/expected 2 inputs but got 1 inputs for model 'simple'/);
  });

  it('batches requests of both gateways together (the worker executes batches > 1)', async () => {
    const bases = range(16, (i) => 1000 + 10 * i);
    const answers = await Promise.all(bases.map((b, i) => inferHttp(gateways[i % 2], b)));
    answers.forEach((a, i) => expectHttpAnswer(a, bases[i]));
    const batches: number[][] = [];
    for (const w of [worker, spare]) {
      const stats = (await (await fetch(`http://127.0.0.1:${w.http}/v2/models/simple/stats`)).json()) as Msg;
      batches.push(...(stats.model_stats[0].batch_stats as Msg[]).map((b) => [Number(b.batch_size), Number(b.compute_infer.count)]));
    }
    const largest = Math.max(...batches.map(([size]) => size));
    expect(largest).toBeGreaterThan(1);
    // Every inference ran on a worker, once: 2 + 1 + 16 (the invalid request never left its gateway).
    expect(batches.reduce((n, [size, count]) => n + size * count, 0)).toBe(19);
  });

  it('a scheduler-only process answers the health endpoints and the metrics port the deployment probes and scrapes', async () => {
    for (const p of ['live', 'ready']) {
      expect((await fetch(`http://127.0.0.1:${scheduler.http}/v2/health/${p}`)).status).toBe(200);
    }
    // Its metrics port answers with the process's own families.
    const metrics = await fetch(`http://127.0.0.1:${scheduler.metrics}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^nv_cpu_utilization /m);
  });

  it('a gateway-only process loads neither onnxruntime nor python', () => {
    const mapped = (pid: number): string => fs.readFileSync(`/proc/${pid}/maps`, 'utf8');
    const children = (pid: number): number[] =>
      fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((d) => {
        try {
          return Number(fs.readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1].split(' ')[1]) === pid;
        } catch {
          return false;
        }
      }).map(Number);
    // The worker is the control: it runs the model with onnxruntime's native library.
    expect(mapped(worker.child.pid!)).toMatch(/onnxruntime/);
    for (const g of gateways) {
      expect(mapped(g.child.pid!)).not.toMatch(/onnxruntime/);
      expect(children(g.child.pid!)).toEqual([]);
    }
  });

  it('a worker killed (-9) mid-batch: the batches it held run again on the other worker, every request answered correctly', async () => {
    const x = [1, 2, 3, 4];
    const slow = (g: RoleProcess): Promise<[number, Msg]> =>
      fetch(`http://127.0.0.1:${g.http}/v2/models/slow_scale/infer`, {
        method: 'POST',
        signal: AbortSignal.timeout(20_000),
        body: JSON.stringify({ inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 4], data: x }] }),
      }).then(async (res) => [res.status, (await res.json()) as Msg]);
    // Steady load through both gateways; the spare worker is killed while it holds batches.
    const sent: Array<Promise<[number, Msg]>> = [];
    const started = Date.now();
    let killed = false;
    while (Date.now() - started < 5000) {
      sent.push(slow(gateways[0]), slow(gateways[1]));
      if (!killed && Date.now() - started > 400) {
        spare.child.kill('SIGKILL');
        killed = true;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    for (const [status, answer] of await Promise.all(sent)) {
      expect([status, answer.outputs?.[0]?.data]).toEqual([200, [2, 4, 6, 8]]);
    }
    expect(scheduler.log()).toMatch(/batch \S+ of 'slow_scale\/1' handed again to worker-\S+ \(worker worker-\S+ is gone\)/);
  });

  // Last: it kills the worker.
  it('a worker killed (-9): every request gets an answer (no hang), new ones UNAVAILABLE within seconds, and a new worker takes over', async () => {
    const body = JSON.stringify({
      inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16], data: range(16, (i) => i) })),
    });
    const infer = (g: RoleProcess): Promise<[number, Msg]> =>
      fetch(`http://127.0.0.1:${g.http}/v2/models/simple/infer`, { method: 'POST', body, signal: AbortSignal.timeout(9000) }).then(
        async (res) => [res.status, (await res.json()) as Msg],
      );
    // In flight while the worker dies: answered (200) or failed with the scheduler's words, never left hanging.
    const inFlight = Array.from({ length: 8 }, (_, i) => infer(gateways[i % 2]));
    worker.child.kill('SIGKILL');
    const killedAt = Date.now();
    for (const [status, answer] of await Promise.all(inFlight)) {
      if (status !== 200) expect([status, answer.error]).toEqual([503, "no live worker of the cluster serves model 'simple' version 1"]);
    }
    let last: [number, Msg];
    do {
      last = await infer(gateways[0]);
      expect(Date.now() - killedAt).toBeLessThan(10_000);
    } while (last[0] === 200);
    expect(last).toEqual([503, { error: "no live worker of the cluster serves model 'simple' version 1" }]);

    // A new worker joins: the scheduler and the gateways use it without a restart.
    worker = await start('worker');
    await roleReady(worker);
    const deadline = Date.now() + 10_000;
    // Each gateway sees the new worker at its next read of the cluster's table (every second).
    for (;;) {
      const statuses = await Promise.all(gateways.map(async (g) => (await infer(g))[0]));
      if (statuses.every((st) => st === 200)) break;
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 200));
    }
    expectHttpAnswer(await inferHttp(gateways[0], 300), 300);
    expectHttpAnswer(await inferHttp(gateways[1], 400), 400);
  });
});

/**
 * Distributed mode's control plane (issue 13, and issue 15's cluster metrics): real processes of
 * the built CLI (`npm run build` first) over a private redis-server: two gateways, one scheduler,
 * two workers, all in explicit model control mode.
 *
 * - An ensemble sent to either gateway runs in that gateway, its steps through their model's
 *   cluster queue: requests of both gateways batch together on the workers, and the statistics
 *   summed over the cluster show it; a failing step's error reaches the client in the embedded
 *   server's words.
 * - Load and unload through one gateway reach every worker and the other gateway; readiness and
 *   the repository index are the cluster's.
 * - Statistics through either gateway (HTTP and gRPC) are the sums over the cluster.
 * - Each role's metrics port has the Redis round-trip histogram; gateways and the scheduler the
 *   live worker count and each worker's load.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { roleReady, startRole, stopCluster, type RoleProcess } from './helpers/cluster-roles';
import { call, inferenceClient, openInferStream, type Client, type Msg } from './helpers/grpc-client';
import { until as poll } from './helpers/poll';
import { startRedis, type RedisServer } from './helpers/redis-server';
import { ROOT } from './helpers/server';

jest.setTimeout(180_000);

let redis: RedisServer;
let repo: string;
const roles: RoleProcess[] = [];
let gateways: RoleProcess[];
let workers: RoleProcess[];
let scheduler: RoleProcess;
let grpcClient: Client;

async function start(role: string): Promise<RoleProcess> {
  const r = await startRole(role, redis.url, repo, {
    args: ['--model-control-mode=explicit', '--load-model=ensemble_batched', '--load-model=ensemble_raises', '--load-model=ensemble_repeat'],
  });
  roles.push(r);
  return r;
}

const url = (r: RoleProcess, p: string): string => `http://127.0.0.1:${r.http}${p}`;

async function status(r: RoleProcess, p: string): Promise<number> {
  return fetch(url(r, p)).then((res) => res.status, () => 0);
}

/** Waits until `f` holds; when it does not in time, the error holds every role's output. */
async function until(what: string, f: () => Promise<boolean>, deadlineMs = 60_000): Promise<void> {
  await poll(what, f, deadlineMs).catch((e: Error) => {
    throw new Error(`${e.message} (${deadlineMs} ms)\n${roles.map((r) => r.log()).join('\n----\n')}`);
  });
}

async function post(r: RoleProcess, p: string, body: unknown): Promise<{ status: number; body: Msg }> {
  const res = await fetch(url(r, p), { method: 'POST', body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Msg) : {} };
}

async function stats(r: RoleProcess, model: string): Promise<Msg> {
  const res = await fetch(url(r, `/v2/models/${model}/stats`));
  const body = (await res.json()) as Msg;
  expect(res.status).toBe(200);
  return body.model_stats[0];
}

/** Inferences per batch size, from a statistics answer's batch_stats. */
const batches = (s: Msg): Map<number, number> =>
  new Map((s.batch_stats as Msg[]).map((b) => [Number(b.batch_size), Number(b.compute_infer.count)]));
const inferencesOf = (s: Msg): number => [...batches(s)].reduce((n, [size, count]) => n + size * count, 0);

const range = (n: number, f: (i: number) => number): number[] => Array.from({ length: n }, (_, i) => f(i));

function simpleBody(base: number): unknown {
  return {
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: range(16, (i) => base + i) },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: range(16, () => 1) },
    ],
  };
}

async function metricsText(r: RoleProcess): Promise<string> {
  return (await fetch(`http://127.0.0.1:${r.metrics}/metrics`)).text();
}

const sample = (text: string, name: string): number[] =>
  text.split('\n').filter((l) => l.startsWith(name) && !l.startsWith('#')).map((l) => Number(l.split(' ').at(-1)));

beforeAll(async () => {
  redis = await startRedis();
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-distributed-control-'));
  fs.cpSync(path.join(ROOT, 'models/simple'), path.join(repo, 'simple'), { recursive: true });
  for (const m of ['slow_scale', 'ensemble_batched', 'execute_raises', 'ensemble_raises', 'decoupled_repeat', 'identity_types', 'ensemble_repeat']) {
    fs.cpSync(path.join(ROOT, 'test/fixtures/python', m), path.join(repo, m), { recursive: true });
  }
  workers = [await start('worker'), await start('worker')];
  scheduler = await start('scheduler');
  gateways = [await start('gateway'), await start('gateway')];
  await Promise.all(
    // Seven python models per worker: on a busy 2-core machine start-up takes a while.
    [...workers, ...gateways].map((r) => roleReady(r, '/v2/models/ensemble_batched/ready', 120_000)),
  );
  grpcClient = inferenceClient(gateways[0].grpc);
});

afterAll(async () => {
  grpcClient?.close();
  await stopCluster(roles, redis, repo);
});

describe('distributed control plane: 2 gateways, 1 scheduler, 2 workers (explicit mode)', () => {
  it('runs an ensemble sent to either gateway, its batching step batched across both gateways, with summed statistics', async () => {
    const answers = await Promise.all(
      range(16, (i) => i).map((i) =>
        post(gateways[i % 2], '/v2/models/ensemble_batched/infer', { id: `e${i}`, inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 4], data: [i, i + 1, i + 2, i + 3] }] }),
      ),
    );
    answers.forEach((a, i) => {
      expect(a.status).toBe(200);
      expect(a.body.id).toBe(`e${i}`);
      expect(a.body.outputs[0].name).toBe('Y');
      expect(a.body.outputs[0].data).toEqual([2 * i, 2 * i + 2, 2 * i + 4, 2 * i + 6]);
    });
    // Summed over the cluster, through either gateway: 16 inferences of the step, in batches > 1.
    for (const g of gateways) {
      const step = await stats(g, 'slow_scale');
      expect(step.inference_stats.success.count).toBe(16);
      expect(step.inference_count).toBe(16);
      expect(inferencesOf(step)).toBe(16);
      expect(Math.max(...batches(step).keys())).toBeGreaterThan(1);
      expect(step.execution_count).toBe([...batches(step).values()].reduce((a, b) => a + b, 0));
      const ensemble = await stats(g, 'ensemble_batched');
      expect(ensemble.inference_stats.success.count).toBe(16);
      expect(ensemble.inference_count).toBe(16);
    }
    // Per process: each worker's own statistics hold the executions it ran, the gateways' the requests they held.
    const perWorker = await Promise.all(workers.map((w) => stats(w, 'slow_scale')));
    expect(perWorker.reduce((n, s) => n + inferencesOf(s), 0)).toBe(16);
    const perGateway = await Promise.all(gateways.map((g) => fetch(url(g, '/v2/models/ensemble_batched/stats')).then((r) => r.json() as Promise<Msg>)));
    expect(perGateway.map((s) => s.model_stats[0].inference_stats.success.count)).toEqual([16, 16]);
  });

  it("a failing ensemble step's error reaches the client in the embedded server's words", async () => {
    const ok = await post(gateways[1], '/v2/models/ensemble_raises/infer', { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1], data: [3] }] });
    expect(ok.status).toBe(200);
    expect(ok.body.outputs[0].data).toEqual([3]);
    const failed = await post(gateways[1], '/v2/models/ensemble_raises/infer', { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1], data: [-1] }] });
    expect(failed.status).toBe(500);
    expect(failed.body.error).toContain('ValueError: execute exploded on -1');
    const ensemble = await stats(gateways[0], 'ensemble_raises');
    expect([ensemble.inference_stats.success.count, ensemble.inference_stats.fail.count]).toEqual([1, 1]);
  });

  it('streams every response of a decoupled ensemble step on through the next step, over gRPC', async () => {
    const { stream, messages, done } = openInferStream(grpcClient);
    const data = Buffer.alloc(12);
    [7, 8, 9].forEach((v, i) => data.writeInt32LE(v, i * 4));
    stream.write({ model_name: 'ensemble_repeat', id: 'r1', inputs: [{ name: 'IN', datatype: 'INT32', shape: [3] }], raw_input_contents: [data] });
    await until('three answers', async () => messages.filter((m) => (m.infer_response?.raw_output_contents ?? []).length === 2).length >= 3 || messages.some((m) => m.error_message), 30_000);
    stream.end();
    await done;
    expect(messages.filter((m) => m.error_message)).toEqual([]);
    const answers = messages
      .map((m) => m.infer_response)
      .filter((r) => (r.raw_output_contents ?? []).length === 2)
      .map((r) => ({ id: r.id, value: r.raw_output_contents[0].readInt32LE(0), index: r.raw_output_contents[1].readUInt32LE(0) }));
    // Triton pairs the k-th value written to each ensemble tensor: INDEX comes from the decoupled
    // step in order; VALUE from identity_types, whose three requests may run on either worker and
    // come back in another order (as with several instances in one Triton).
    expect(answers.map((x) => [x.id, x.index])).toEqual([['r1', 0], ['r1', 1], ['r1', 2]]);
    expect(answers.map((x) => x.value).sort()).toEqual([7, 8, 9]);
    expect((await stats(gateways[1], 'identity_types')).inference_stats.success.count).toBe(3);
  });

  it('loads a model through one gateway on every worker and the other gateway, and unloads it the same way', async () => {
    expect(await status(gateways[1], '/v2/models/simple/ready')).toBe(400);
    // With a config override: every process loads the model with it.
    const tensor = (name: string): Msg => ({ name, data_type: 'TYPE_INT32', dims: [16] });
    const config = JSON.stringify({
      name: 'simple', backend: 'onnxruntime', max_batch_size: 4,
      input: [tensor('INPUT0'), tensor('INPUT1')], output: [tensor('OUTPUT0'), tensor('OUTPUT1')],
    });
    const load = await post(gateways[0], '/v2/repository/models/simple/load', { parameters: { config } });
    expect(load.status).toBe(200);
    // Loaded everywhere once the load answered.
    for (const r of [...workers, ...gateways]) {
      expect(await status(r, '/v2/models/simple/ready')).toBe(200);
      expect(((await (await fetch(url(r, '/v2/models/simple/config'))).json()) as Msg).max_batch_size).toBe(4);
    }
    // A config the workers refuse: the embedded server's 400, and what served keeps serving.
    const bad = await post(gateways[1], '/v2/repository/models/simple/load', { parameters: { config: '{"nonsense_field": 1}' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/simple/);
    for (const r of gateways) expect(await status(r, '/v2/models/simple/ready')).toBe(200);
    const answer = await post(gateways[1], '/v2/models/simple/infer', simpleBody(10));
    expect(answer.status).toBe(200);
    expect(answer.body.outputs[0].data).toEqual(range(16, (i) => 11 + i));
    const index = (await post(gateways[1], '/v2/repository/index', {})).body as unknown as Msg[];
    expect(index.find((e) => e.name === 'simple')).toMatchObject({ name: 'simple', version: '1', state: 'READY' });

    const unload = await post(gateways[1], '/v2/repository/models/simple/unload', {});
    expect(unload.status).toBe(200);
    for (const r of [...workers, ...gateways]) expect(await status(r, '/v2/models/simple/ready')).toBe(400);
    const after = (await post(gateways[0], '/v2/repository/index', {})).body as unknown as Msg[];
    expect(after.find((e) => e.name === 'simple')).toEqual({ name: 'simple', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' });
    const refused = await post(gateways[0], '/v2/models/simple/infer', simpleBody(1));
    // The embedded server's answer for a model with no version loaded.
    expect(refused.status).toBe(404);
    expect(refused.body.error).toBe("Request for unknown model: 'simple' has no available versions");
  });

  it("answers a load that fails on the workers with their words, and the index shows the workers' reason", async () => {
    fs.mkdirSync(path.join(repo, 'broken/1'), { recursive: true });
    fs.writeFileSync(path.join(repo, 'broken/config.pbtxt'), 'name: "broken"\nbackend: "onnxruntime"\nmax_batch_size: 0\n');
    fs.writeFileSync(path.join(repo, 'broken/1/model.onnx'), 'not an onnx file');
    const viaGateway = await post(gateways[1], '/v2/repository/models/broken/load', {});
    expect(viaGateway.status).toBe(400);
    expect(viaGateway.body.error).toMatch(/^failed to load 'broken'/);
    const index = (await post(gateways[0], '/v2/repository/index', {})).body as unknown as Msg[];
    const row = index.find((e) => e.name === 'broken');
    expect(row).toMatchObject({ name: 'broken', version: '1', state: 'UNAVAILABLE' });
    expect(row!.reason.length).toBeGreaterThan(0);
    expect(await status(gateways[0], '/v2/models/broken/ready')).toBe(400);
  });

  it('sums the statistics of requests sent through both gateways (HTTP and gRPC)', async () => {
    expect((await post(gateways[0], '/v2/repository/models/simple/load', {})).status).toBe(200);
    const sent = await Promise.all(range(10, (i) => i).map((i) => post(gateways[i % 2], '/v2/models/simple/infer', simpleBody(i))));
    sent.forEach((a, i) => {
      expect([a.status, a.body.error]).toEqual([200, undefined]);
      expect(a.body.outputs[0].data).toEqual(range(16, (j) => i + j + 1));
    });
    const http = await stats(gateways[1], 'simple');
    expect(http.inference_stats.success.count).toBe(10);
    expect(http.inference_stats.fail.count).toBe(0);
    expect(http.inference_count).toBe(10);
    expect(http.inference_stats.queue.count).toBe(10);
    expect(http.inference_stats.compute_infer.count).toBe(10);
    expect(inferencesOf(http)).toBe(10);
    expect(http.last_inference).toBeGreaterThan(0);
    // Every model's statistics at once (GET /v2/models/stats) are summed the same way.
    const all = (await (await fetch(url(gateways[0], '/v2/models/stats'))).json()) as Msg;
    const row = (all.model_stats as Msg[]).find((m) => m.name === 'simple');
    expect([row?.inference_stats.success.count, row?.execution_count]).toEqual([10, http.execution_count]);
    expect((all.model_stats as Msg[]).find((m) => m.name === 'ensemble_batched')?.inference_count).toBe(16);
    const grpc = await call(grpcClient, 'ModelStatistics', { name: 'simple', version: '' });
    const g = grpc.model_stats[0];
    expect(Number(g.inference_stats.success.count)).toBe(10);
    expect(Number(g.inference_count)).toBe(10);
    expect(Number(g.execution_count)).toBe(Number(http.execution_count));
    // gRPC's RepositoryModelUnload takes the same way as HTTP's.
    await call(grpcClient, 'RepositoryModelUnload', { model_name: 'simple' });
    for (const r of [...workers, ...gateways]) expect(await status(r, '/v2/models/simple/ready')).toBe(400);
  });

  it("exports the Redis round trip on every role, the live worker count and each worker's load on gateways and the scheduler", async () => {
    // Pings run once per heartbeat (1 s): wait for each role's first, rather than count on the
    // tests before this one having taken that long (run alone, this one came first).
    for (const r of [...gateways, scheduler, ...workers]) {
      await until(`a Redis round trip timed on port ${r.metrics}`, async () => (sample(await metricsText(r), 'nereid_redis_round_trip_ms_count')[0] ?? 0) > 0, 10_000);
      const text = await metricsText(r);
      const [count] = sample(text, 'nereid_redis_round_trip_ms_count');
      expect(count).toBeGreaterThan(0);
      const [sum] = sample(text, 'nereid_redis_round_trip_ms_sum');
      expect(sum / count).toBeGreaterThan(0);
      expect(sum / count).toBeLessThan(1000);
    }
    for (const r of [...gateways, scheduler]) {
      // Both workers' heartbeats heard (the roles were ready before, their heartbeats may not all be in).
      await until(`2 live workers on port ${r.metrics}`, async () => sample(await metricsText(r), 'nereid_cluster_workers ')[0] === 2, 10_000);
      const text = await metricsText(r);
      expect(sample(text, 'nereid_cluster_workers ')).toEqual([2]);
      const loads = text.split('\n').filter((l) => l.startsWith('nereid_cluster_worker_load{'));
      expect(loads).toHaveLength(2);
      for (const l of loads) {
        expect(l).toMatch(/^nereid_cluster_worker_load\{worker="worker-[^"]+"\} \d+$/);
        expect(Number(l.split(' ').at(-1))).toBeGreaterThanOrEqual(0);
      }
    }
    expect(await metricsText(workers[0])).not.toMatch(/^nereid_cluster_workers /m);
  });

  it("shows a worker's load while it has batches to run", async () => {
    // slow_scale spends 100 ms per batch: 8 clients in a loop keep both workers' instances busy.
    let stop = false;
    const client = async (i: number): Promise<void> => {
      while (!stop) {
        const a = await post(gateways[i % 2], '/v2/models/slow_scale/infer', { inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 4], data: [i, i, i, i] }] });
        expect(a.status).toBe(200);
      }
    };
    const clients = range(8, (i) => i).map(client);
    let busiest = 0;
    try {
      await until('a worker load above 0', async () => {
        const loads = (await metricsText(gateways[0])).split('\n').filter((l) => l.startsWith('nereid_cluster_worker_load{')).map((l) => Number(l.split(' ').at(-1)));
        busiest = Math.max(busiest, ...loads);
        return busiest > 0;
      }, 10_000);
    } finally {
      stop = true;
      await Promise.all(clients);
    }
    // Batches running or waiting on one worker's instance: at most the scheduler's pipeline depth per instance.
    expect(busiest).toBeGreaterThan(0);
    expect(busiest).toBeLessThanOrEqual(8);
  });

  it('statistics leave out a worker that does not answer within the timeout (1 s), and the gateway says which', async () => {
    const full = await stats(gateways[0], 'slow_scale');
    // A stopped worker is still live (its last heartbeat is recent) but answers nothing.
    workers[1].child.kill('SIGSTOP');
    try {
      const started = Date.now();
      const partial = await stats(gateways[0], 'slow_scale');
      const elapsed = Date.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(900);
      expect(elapsed).toBeLessThan(5000);
      // The requests' figures are the gateways'; the stopped worker's executions are missing.
      expect(partial.inference_stats.success.count).toBe(full.inference_stats.success.count);
      const own = await stats(workers[0], 'slow_scale');
      expect(partial.execution_count).toBe(own.execution_count);
      expect(gateways[0].log()).toMatch(/statistics of 'slow_scale': no answer within the timeout from worker-\S+ \(left out\)/);
    } finally {
      workers[1].child.kill('SIGCONT');
    }
  });

  it('a worker and a gateway that join later load what the cluster serves (models loaded through the API before they started)', async () => {
    expect((await post(gateways[1], '/v2/repository/models/simple/load', {})).status).toBe(200);
    const [worker, gateway] = [await start('worker'), await start('gateway')];
    await roleReady(worker, '/v2/models/simple/ready', 120_000);
    await roleReady(gateway, '/v2/models/simple/ready', 60_000);
    const answer = await post(gateway, '/v2/models/simple/infer', simpleBody(3));
    expect(answer.status).toBe(200);
    expect(answer.body.outputs[0].data).toEqual(range(16, (i) => 4 + i));
    // The new worker takes its part of the cluster's work: 3 live workers now.
    await until('3 live workers', async () => sample(await metricsText(gateways[0]), 'nereid_cluster_workers ')[0] === 3, 10_000);
  });
});

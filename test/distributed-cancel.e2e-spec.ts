/**
 * End-to-end, distributed mode: a client that goes away cancels its request cluster-wide. The
 * `wait_cancel` python model (test/fixtures/python) polls `request.is_cancelled()` for up to 10 s;
 * an HTTP client of the gateway closes its connection 300 ms after sending, and the worker, another
 * process reached only through Redis, must see the cancel and end the execution long before the
 * model's 10 s wait would have. Real processes: 1 gateway, 1 scheduler, 1 worker, a private
 * redis-server.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { roleReady, startRole, stopCluster, type RoleProcess } from './helpers/cluster-roles';
import type { Msg } from './helpers/grpc-client';
import { sleep, until } from './helpers/poll';
import { startRedis, type RedisServer } from './helpers/redis-server';
import { ROOT } from './helpers/server';

jest.setTimeout(150_000);

let redis: RedisServer;
let repo: string;
const roles: RoleProcess[] = [];

beforeAll(async () => {
  redis = await startRedis();
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-cancel-'));
  fs.cpSync(path.join(ROOT, 'test/fixtures/python/wait_cancel'), path.join(repo, 'wait_cancel'), { recursive: true });
  // The model writes this file when its execute begins: the client leaves only once it has.
  fs.appendFileSync(path.join(repo, 'wait_cancel/config.pbtxt'), `parameters { key: "started_file" value { string_value: "${startedFile()}" } }\n`);
});

const startedFile = (): string => path.join(repo, 'started');

afterAll(async () => {
  await stopCluster(roles, redis, repo);
});

async function start(role: string): Promise<RoleProcess> {
  const r = await startRole(role, redis.url, repo);
  roles.push(r);
  return r;
}

/** The worker's own figures of wait_cancel: executions, and the time they spent in the model (batch statistics). */
async function executions(worker: RoleProcess): Promise<{ count: number; inferNs: number }> {
  const stats = (await (await fetch(`http://127.0.0.1:${worker.http}/v2/models/wait_cancel/stats`)).json()) as Msg;
  const s = stats.model_stats[0];
  const inferNs = (s.batch_stats as Msg[]).reduce((ns, b) => ns + Number(b.compute_infer.ns), 0);
  return { count: Number(s.execution_count), inferNs };
}

describe('distributed mode: a client that disconnects', () => {
  it('cancels its request on the worker running it, through Redis', async () => {
    const worker = await start('worker');
    await start('scheduler');
    const gateway = await start('gateway');
    await Promise.all([worker, gateway].map((r) => roleReady(r, '/v2/models/wait_cancel/ready', 120_000)));

    const body = JSON.stringify({ inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: [7] }] });
    const req = http.request(`http://127.0.0.1:${gateway.http}/v2/models/wait_cancel/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('error', () => undefined);
    req.end(body);
    // In the model (through gateway, Redis, scheduler, Redis, worker and stub), then a little more.
    await until('the model to start executing', () => fs.existsSync(startedFile()), 30_000);
    const inModel = Date.now();
    await sleep(300);
    const closed = Date.now();
    req.destroy();

    let e = await executions(worker);
    while (e.count === 0 && Date.now() - closed < 12_000) {
      await sleep(50);
      e = await executions(worker);
    }
    const tookMs = Date.now() - closed;
    console.log(`distributed-cancel: the worker's execution ended ${tookMs} ms after the client left (${(e.inferNs / 1e6).toFixed(0)} ms in the model)`);
    expect(e.count).toBe(1);
    // Uncancelled, the model waits 10 s; cancelled, it stops within its 10 ms poll plus the hops.
    expect(tookMs).toBeLessThan(5000);
    // It ran (the model held the request until the cancel reached it), and stopped at the cancel.
    expect(e.inferNs).toBeGreaterThan((closed - inModel) * 1e6 * 0.9);
    expect(e.inferNs).toBeLessThan(5e9);
    // The gateway holding the client counts the request as failed (the statistics sum the cluster's).
    const summed = ((await (await fetch(`http://127.0.0.1:${gateway.http}/v2/models/wait_cancel/stats`)).json()) as Msg).model_stats[0];
    expect(Number(summed.inference_stats.fail.count)).toBe(1);
    expect(Number(summed.inference_stats.success.count)).toBe(0);

    // The worker goes on serving: a request that stays answers with its input.
    const ok = await fetch(`http://127.0.0.1:${gateway.http}/v2/models/wait_cancel/infer`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    // wait_cancel answers only once cancelled or after its 10 s wait: this one takes the wait.
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as Msg).outputs[0].data).toEqual([7]);
  });
});

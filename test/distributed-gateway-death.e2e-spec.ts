/**
 * A gateway's death in distributed mode (issue 13): real processes of the built CLI (`npm run
 * build` first) over a private redis-server: two gateways, a scheduler and a worker. Clients load
 * both gateways; one gateway is killed (-9) while it has requests queued for a slow model. The
 * clients of the other gateway see no failure; the requests the dead gateway had queued run once
 * and are done with (the request queue drains, nothing is pending), and their answers, which go to
 * a mailbox nobody reads, stay bounded and expire with the mailbox's TTL.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Redis from 'ioredis';
import { roleId, roleReady, startRole, stopCluster, type RoleProcess } from './helpers/cluster-roles';
import type { Msg } from './helpers/grpc-client';
import { sleep, until } from './helpers/poll';
import { startRedis, type RedisServer } from './helpers/redis-server';
import { ROOT } from './helpers/server';
import { SteadyLoad } from './helpers/steady-load';

jest.setTimeout(120_000);

let redis: RedisServer;
let repo: string;
let conn: Redis;
const roles: RoleProcess[] = [];

beforeAll(async () => {
  redis = await startRedis();
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-gateway-death-'));
  fs.cpSync(path.join(ROOT, 'models/simple'), path.join(repo, 'simple'), { recursive: true });
  fs.appendFileSync(path.join(repo, 'simple/config.pbtxt'), '\ninstance_group [{ kind: KIND_CPU, count: 1 }]\n');
  // slow_scale (python, 100 ms per batch of up to 8): requests queue up behind it.
  fs.cpSync(path.join(ROOT, 'test/fixtures/python/slow_scale'), path.join(repo, 'slow_scale'), { recursive: true });
  conn = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await conn.connect();
});

afterAll(async () => {
  conn?.disconnect();
  await stopCluster(roles, redis, repo);
});

async function start(role: string): Promise<RoleProcess> {
  const r = await startRole(role, redis.url, repo);
  roles.push(r);
  return r;
}

/** The slow_scale requests the worker has run (its batch statistics: rows of each batch size). */
async function slowCount(worker: RoleProcess): Promise<number> {
  const stats = (await (await fetch(`http://127.0.0.1:${worker.http}/v2/models/slow_scale/stats`)).json()) as Msg;
  return (stats.model_stats[0].batch_stats as Msg[]).reduce((n, b) => n + Number(b.batch_size) * Number(b.compute_infer.count), 0);
}

describe('distributed mode: a gateway killed (-9) under load', () => {
  it("the other gateway's clients see no failure; the dead gateway's queued requests run once and its mailbox does not grow", async () => {
    const worker = await start('worker');
    await start('scheduler');
    const [doomed, survivor] = [await start('gateway'), await start('gateway')];
    await Promise.all([worker, doomed, survivor].map((r) => roleReady(r)));
    await Promise.all([worker, doomed, survivor].map((r) => roleReady(r, '/v2/models/slow_scale/ready')));
    const doomedId = await roleId(doomed, 'gateway');
    const requestQueue = 'nereid:q:requests:slow_scale/1';

    const targets = (g: RoleProcess): Array<{ proto: 'http' | 'grpc'; port: number }> => [
      ...Array.from({ length: 4 }, () => ({ proto: 'http' as const, port: g.http })),
      ...Array.from({ length: 4 }, () => ({ proto: 'grpc' as const, port: g.grpc })),
    ];
    const survivors = new SteadyLoad(targets(survivor), { hangMs: 10_000, thinkMs: 5 });
    const doomedLoad = new SteadyLoad(targets(doomed), { hangMs: 10_000, thinkMs: 5 });
    survivors.start();
    doomedLoad.start();
    await sleep(1500);

    // 48 requests of slow_scale held by the doomed gateway: 6 batches of 100 ms, queued behind each other.
    const before = await slowCount(worker);
    const queued = Array.from({ length: 48 }, () =>
      fetch(`http://127.0.0.1:${doomed.http}/v2/models/slow_scale/infer`, {
        method: 'POST',
        body: JSON.stringify({ inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }] }),
      }).then((res) => res.status, (e: Error) => e.name),
    );
    // Killed once it has put half of them on the queue (queued, or already run).
    await until('the doomed gateway to queue slow_scale requests', async () => (await conn.xlen(requestQueue)) + (await slowCount(worker)) - before >= 24, 10_000);
    await doomed.kill();
    const killedAt = Date.now();
    await sleep(3000);
    await survivors.stop();
    await doomedLoad.stop();
    // The dead gateway's clients lost their connections (its requests were lost with it).
    const lostClients = (await Promise.all(queued)).filter((s) => s !== 200).length;

    // The survivor's clients: every answer correct, none failed.
    const failures = survivors.outcomes.filter((o) => o.kind !== 'ok');
    expect(failures.slice(0, 10)).toEqual([]);
    expect(survivors.outcomes.filter((o) => o.done > killedAt).length).toBeGreaterThan(0);

    // The dead gateway's queued requests ran (once each) and are done with: nothing left queued or pending.
    await until('the request queue to drain', async () => {
      const [length, pending] = await Promise.all([conn.xlen(requestQueue), conn.xpending(requestQueue, 'nereid') as Promise<[number, ...unknown[]]>]);
      return length === 0 && Number(pending[0]) === 0;
    }, 15_000);
    const ran = (await slowCount(worker)) - before;
    expect(ran).toBeGreaterThanOrEqual(24);
    expect(ran).toBeLessThanOrEqual(48);
    await sleep(1000);
    expect((await slowCount(worker)) - before).toBe(ran);

    // Their answers went to the dead gateway's mailbox, which nobody reads: bounded by what it had
    // accepted, no longer growing, and expiring (the mailbox TTL, 60 s) rather than kept forever.
    const mailbox = `nereid:m:gateway:${doomedId}`;
    const length = await conn.xlen(mailbox);
    expect(length).toBeLessThanOrEqual(48 + 8);
    await sleep(500);
    expect(await conn.xlen(mailbox)).toBe(length);
    if (length > 0) {
      const ttl = await conn.pttl(mailbox);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    }
    process.stdout.write(
      `gateway death: survivor ${survivors.outcomes.length} requests, 0 failed; the dead gateway's ${lostClients} slow_scale clients lost their connections; ` +
        `${ran} of its 48 queued requests ran on the worker after all; its mailbox holds ${length} unread answers, expiring in ${await conn.pttl(mailbox)} ms\n`,
    );
  });
});

/**
 * The chaos test of distributed mode (issue 13): real processes of the built CLI (`npm run build`
 * first) over a private redis-server: 2 gateways, 2 schedulers, 2 workers. Sixteen clients (HTTP
 * and gRPC, through both gateways) keep inferring `simple` and check every answer exactly while,
 * one after another with a pause between, a worker is killed (-9), then a scheduler (the one that
 * holds `simple`'s queue when leases name one), then Redis is killed and started again, empty, on
 * the same port. Every request must get its correct answer, or, while Redis is down, UNAVAILABLE
 * within about a second; none may hang, and the load must go on after each fault. The recovery
 * times are printed. `CHAOS_DUMP=<path prefix>` also writes every outcome (`<prefix>.json`) and
 * each process's output (`<prefix>.<n>.<role>.log`).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Redis from 'ioredis';
import { roleId, roleReady, startRole, stopCluster, type RoleProcess } from './helpers/cluster-roles';
import { sleep, until } from './helpers/poll';
import { startRedis, type RedisServer } from './helpers/redis-server';
import { ROOT } from './helpers/server';
import { longestGap, okRate, SteadyLoad, type Outcome } from './helpers/steady-load';

jest.setTimeout(240_000);

/** A request unanswered this long hangs (the slowest allowed path: a batch handed again after a worker's heartbeat is lost, 3.5 s). */
const HANG_MS = 10_000;
/**
 * An UNAVAILABLE error while Redis is down must come within a second (from the request, or from
 * Redis's death for one already in flight), plus what the machine itself adds: the slowest 1 % of
 * the answers before the first fault (at least 500 ms). On the shared 2-core machine, at load
 * averages of 20-30, even successful answers took 200 ms at the median.
 */
const FAST_ERROR_MS = 1000;

let redis: RedisServer;
let repo: string;
const roles: RoleProcess[] = [];

beforeAll(async () => {
  redis = await startRedis();
  if (redis.external) throw new Error('the chaos test restarts Redis: it needs a redis-server of its own (unset REDIS_URL)');
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-chaos-'));
  fs.cpSync(path.join(ROOT, 'models/simple'), path.join(repo, 'simple'), { recursive: true });
  fs.appendFileSync(
    path.join(repo, 'simple/config.pbtxt'),
    '\ninstance_group [{ kind: KIND_CPU, count: 1 }]\ndynamic_batching { max_queue_delay_microseconds: 1000 }\n',
  );
});

afterAll(async () => {
  if (process.env.CHAOS_DUMP) roles.forEach((r, i) => fs.writeFileSync(`${process.env.CHAOS_DUMP}.${i}.${r.role}.log`, r.log()));
  await stopCluster(roles, redis, repo);
});

async function start(role: string): Promise<RoleProcess> {
  const r = await startRole(role, redis.url, repo);
  roles.push(r);
  return r;
}

/** The scheduler that holds `simple` version 1's queue: the owner its lease in Redis names (`nereid:lease:<version>`, `<owner>#<fence>`). */
async function queueOwner(schedulers: RoleProcess[]): Promise<RoleProcess> {
  const ids = await Promise.all(schedulers.map((s) => roleId(s, 'scheduler')));
  const conn = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await conn.connect();
    const keys = (await conn.keys('nereid:lease:*')).filter((k) => k.includes('simple'));
    const values = await Promise.all(keys.map((k) => conn.get(k)));
    const owners = schedulers.filter((_, i) => values.some((v) => v?.startsWith(`${ids[i]}#`)));
    expect([keys, owners.length]).toEqual([keys, 1]);
    return owners[0];
  } finally {
    conn.disconnect();
  }
}

/**
 * The dead worker's work queues with their TTLs, and whether the dead scheduler is still a consumer
 * of simple's request queue (waiting up to 5 s for the new holder to forget it).
 */
async function redisLeftovers(workerId: string, schedulerId: string): Promise<{ workQueues: Array<[string, number]>; schedulerConsumer: boolean }> {
  const conn = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await conn.connect();
    const keys = await conn.keys(`nereid:q:work:${workerId}:*`);
    const workQueues = await Promise.all(keys.map(async (k): Promise<[string, number]> => [k, await conn.pttl(k)]));
    const isConsumer = async (): Promise<boolean> => {
      const info = (await conn.xinfo('CONSUMERS', 'nereid:q:requests:simple/1', 'nereid')) as Array<Array<string | number>>;
      return info.some((c) => c[c.indexOf('name') + 1] === schedulerId);
    };
    const deadline = Date.now() + 5000;
    while ((await isConsumer()) && Date.now() < deadline) await sleep(200);
    return { workQueues, schedulerConsumer: await isConsumer() };
  } finally {
    conn.disconnect();
  }
}

interface Fault {
  name: string;
  at: number;
  /** Until when the fault's phase lasts (the next fault, or the end of the load). */
  until: number;
  /** Errors allowed in the phase (Redis's: UNAVAILABLE). */
  allowsUnavailable: boolean;
  /** When the fault was over (Redis started again), if it ends by itself. */
  repairedAt?: number;
}

function describeOutcome(o: Outcome, t0: number): string {
  return `${o.proto}:${o.port} sent +${o.sent - t0} ms answered +${o.done - t0} ms: ${o.kind} ${o.code ?? ''} ${o.message ?? ''}`;
}

describe('distributed mode under chaos: 2 gateways, 2 schedulers, 2 workers, 16 clients', () => {
  it('kill -9 a worker, then a scheduler, then restart Redis: 0 lost or wrong answers, and the load goes on', async () => {
    const workers = [await start('worker'), await start('worker')];
    const schedulers = [await start('scheduler'), await start('scheduler')];
    const gateways = [await start('gateway'), await start('gateway')];
    // Six node processes starting at once on a busy 2-core machine took up to a minute: wait longer.
    await Promise.all([...workers, ...gateways].map((r) => roleReady(r, '/v2/models/simple/ready', 120_000)));

    // 16 clients: per gateway 4 over HTTP and 4 over gRPC.
    const load = new SteadyLoad(
      Array.from({ length: 16 }, (_, i) => {
        const g = gateways[i % 2];
        return i % 4 < 2 ? { proto: 'http' as const, port: g.http } : { proto: 'grpc' as const, port: g.grpc };
      }),
      { hangMs: HANG_MS, thinkMs: 5 },
    );
    // Warm-up (not judged: a cold process on a busy machine may miss the 1 s Redis command
    // timeout): until every client has had an answer, and two seconds at least.
    load.start();
    const warm = Date.now();
    await until('every client answered once', () => new Set(load.outcomes.filter((o) => o.kind === 'ok').map((o) => o.client)).size === 16, 30_000);
    await sleep(Math.max(0, warm + 2000 - Date.now()));
    const t0 = Date.now();
    await sleep(2000);
    const baseline = okRate(load.outcomes, t0, Date.now());
    const before = load.outcomes.filter((o) => o.sent >= t0).map((o) => o.done - o.sent).sort((a, b) => a - b);
    const fastErrorMs = FAST_ERROR_MS + Math.max(500, before[Math.floor(0.99 * (before.length - 1))] ?? 0);

    const faults: Fault[] = [];
    const begin = (name: string, allowsUnavailable = false): Fault => {
      const f: Fault = { name, at: Date.now(), until: Number.POSITIVE_INFINITY, allowsUnavailable };
      if (faults.length > 0) faults[faults.length - 1].until = f.at;
      faults.push(f);
      return f;
    };

    // 1. A worker dies: its batches are handed again to the other one once its heartbeat is lost.
    begin('kill -9 worker');
    await workers[1].kill();
    await sleep(6000);

    // 2. The scheduler that holds simple's lease dies: the other one takes the lease over and claims its queue.
    const owner = await queueOwner(schedulers);
    begin(`kill -9 scheduler (${owner === schedulers[0] ? 'first' : 'second'})`);
    await owner.kill();
    await sleep(7000);

    // What the dead worker and scheduler left in Redis does not stay there forever: the worker's
    // queues lapse (60 s after it stopped renewing them), and the scheduler is no longer a consumer
    // of simple's request queue once the new holder claimed what it held.
    const leftovers = await redisLeftovers(await roleId(workers[1], 'worker'), await roleId(owner, 'scheduler'));

    // 3. Redis dies (nothing saved) and comes back empty on the same port two seconds later.
    const redisFault = begin('Redis killed, restarted after 2 s', true);
    await redis.stop(true);
    await sleep(2000);
    await redis.restart();
    redisFault.repairedAt = Date.now();
    await sleep(6000);

    await load.stop();
    const end = Date.now();
    faults[faults.length - 1].until = end;
    const warmUp = load.outcomes.filter((o) => o.sent < t0);
    const outcomes = load.outcomes.filter((o) => o.sent >= t0);

    // The report: per phase, answers, failures and the recovery time.
    const lines = [
      `warm-up: ${warmUp.length} requests (${warmUp.filter((o) => o.kind !== 'ok').length} not ok), not judged; ` +
        `baseline ${baseline.toFixed(0)} answers/s before the first fault, ${outcomes.length} requests judged; ` +
        `errors allowed while Redis is down within ${fastErrorMs} ms`,
    ];
    for (const f of faults) {
      const inPhase = outcomes.filter((o) => o.done >= f.at && o.done < f.until);
      const count = (k: string): number => inPhase.filter((o) => o.kind === k).length;
      const longestWait = Math.max(0, ...inPhase.map((o) => o.done - o.sent));
      const gap = longestGap(outcomes, f.at, f.until);
      lines.push(
        `${f.name} at +${f.at - t0} ms: ${count('ok')} ok, ${count('error')} errors, ${count('wrong')} wrong, ${count('hang')} hung; ` +
          `longest wait for an answer ${longestWait} ms; longest stretch without a right answer ${gap.end - gap.start} ms ` +
          `(+${gap.start - f.at} to +${gap.end - f.at} ms after the fault${f.repairedAt ? `, Redis back at +${f.repairedAt - f.at} ms` : ''})`,
      );
    }
    const errors = new Map<string, number>();
    for (const o of outcomes.filter((x) => x.kind !== 'ok')) {
      const k = `${o.kind} ${o.code ?? ''} ${o.message ?? ''}`;
      errors.set(k, (errors.get(k) ?? 0) + 1);
    }
    for (const [k, n] of errors) lines.push(`  ${n} x ${k}`);
    process.stdout.write(`chaos: ${lines.join('\n  ')}\n`);
    if (process.env.CHAOS_DUMP) {
      fs.writeFileSync(`${process.env.CHAOS_DUMP}.json`, JSON.stringify({ t0, faults, outcomes }));
    }

    // No request hung or got a wrong answer; errors only while Redis was down, UNAVAILABLE, and fast.
    const bad = outcomes.filter((o) => {
      if (o.kind === 'ok') return false;
      if (o.kind !== 'error') return true;
      const fault = faults.find((f) => o.done >= f.at && o.done < f.until);
      if (!fault?.allowsUnavailable) return true;
      if (o.code !== '503' && o.code !== 'UNAVAILABLE') return true;
      // Words that say what happened: Redis is unavailable, or (until the workers' entries are
      // back in the emptied Redis) no live worker serves the model.
      if (!/^the cluster's Redis is unavailable: |^no live worker of the cluster serves model 'simple' version 1$/.test(o.message ?? '')) return true;
      if (/enableOfflineQueue|maxRetriesPerRequest/.test(o.message ?? '')) return true;
      // Fast: from the request's start, or from Redis's death for one already in flight.
      return o.done - Math.max(o.sent, fault.at) > fastErrorMs;
    });
    expect(bad.slice(0, 20).map((o) => describeOutcome(o, t0))).toEqual([]);

    // The load went on after each fault: right answers came again within seconds of the fault (of
    // Redis's return), and kept coming until the end of the phase. A longest gap under a second is
    // no stall (answers kept coming; a CI run's longest was 103 ms, 6 s after a worker's kill, and
    // failed when its end was taken for the end of a stall).
    for (const f of faults) {
      const gap = longestGap(outcomes, f.at, f.until);
      const stalled = gap.end - gap.start >= 1000;
      const resumed = stalled ? gap.end - (f.repairedAt ?? f.at) : 0;
      expect([f.name, !stalled || gap.end < f.until, resumed < 6000]).toEqual([f.name, true, true]);
    }
    expect(leftovers.workQueues.length).toBeGreaterThan(0);
    for (const ttl of leftovers.workQueues.map(([, t]) => t)) {
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    }
    expect(leftovers.schedulerConsumer).toBe(false);
    // Each process that was not killed is still running.
    for (const r of [workers[0], ...schedulers.filter((s) => s !== owner), ...gateways]) expect(r.child.exitCode).toBeNull();
  });
});

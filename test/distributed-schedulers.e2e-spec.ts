/**
 * Distributed mode with two schedulers (issue 13): real processes of the built CLI (`npm run
 * build` first) over a private redis-server: two gateways, two schedulers, two workers.
 *
 * - Each model version's request queue is held by one scheduler at a time (a lease with fencing),
 *   so requests of both gateways batch together (batches > 1).
 * - Sequences through the roles: `accumulator` (direct strategy, implicit state kept by the
 *   scheduler's sequence batcher) and `sequence_sum_py` (oldest strategy, the sum kept by the
 *   python model on the worker): 16 interleaved sequences each, sent through both gateways in
 *   turn, give exact running sums.
 * - kill -9 of the scheduler holding every lease, with a full queue: every request accepted is
 *   answered, the other scheduler takes the leases over within a few seconds (measured, printed),
 *   and a sequence that lived on the dead scheduler gets the lost-state error on its next request
 *   without START (and restarts with START).
 * - kill -9 of a worker: a python sequence whose state lived on it gets the lost-state error; the
 *   accumulator's sequences go on exactly (their state is in the scheduler).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Redis from 'ioredis';
import { roleId, roleReady, startRole, type RoleProcess } from './helpers/cluster-roles';
import type { Msg } from './helpers/grpc-client';
import { until } from './helpers/poll';
import { startRedis, type RedisServer } from './helpers/redis-server';
import { httpStep, type Outcome, type SequenceId } from './helpers/sequence-client';
import { ROOT } from './helpers/server';
import { LEASE_TICK_MS, LEASE_TTL_MS } from '../apps/scheduler/src/model-lease';

jest.setTimeout(180_000);

const MODELS = ['simple', 'accumulator', 'sequence_sum_py', 'slow_scale'];

let redis: RedisServer;
let repo: string;
let kv: Redis;
const roles: RoleProcess[] = [];
let workers: RoleProcess[];
let schedulers: RoleProcess[];
let gateways: RoleProcess[];
const ids = new Map<RoleProcess, string>();

const range = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));
const base = (r: RoleProcess): string => `http://127.0.0.1:${r.http}`;

async function start(role: 'worker' | 'scheduler' | 'gateway'): Promise<RoleProcess> {
  const r = await startRole(role, redis.url, repo);
  roles.push(r);
  return r;
}

/** The scheduler that holds `model`'s lease now (from Redis: `<scheduler id>#<fence>`). */
async function holder(model: string): Promise<{ id: string; fence: number } | undefined> {
  const v = await kv.get(`nereid:lease:${model}/1`);
  if (!v) return undefined;
  const at = v.lastIndexOf('#');
  return { id: v.slice(0, at), fence: Number(v.slice(at + 1)) };
}

async function inferSimple(r: RoleProcess, b: number): Promise<void> {
  const res = await fetch(`${base(r)}/v2/models/simple/infer`, {
    method: 'POST',
    body: JSON.stringify({
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: range(16, (i) => b + i) },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: range(16, (i) => i) },
      ],
    }),
  });
  const body = (await res.json()) as Msg;
  expect(res.status).toBe(200);
  expect(body.outputs.find((o: Msg) => o.name === 'OUTPUT0').data).toEqual(range(16, (i) => b + 2 * i));
}

/** One slow_scale request: its answer is 2 * X, or the error text; `at`: when it came (Date.now()). */
async function inferSlow(r: RoleProcess, x: number): Promise<{ ok: boolean; detail: string; at: number }> {
  const res = await fetch(`${base(r)}/v2/models/slow_scale/infer`, {
    method: 'POST',
    body: JSON.stringify({ inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 4], data: [x, x, x, x] }] }),
  });
  const body = (await res.json()) as Msg;
  if (res.status !== 200) return { ok: false, detail: `${res.status} ${body.error}`, at: Date.now() };
  const y = body.outputs[0].data as number[];
  return { ok: y.every((v) => v === 2 * x), detail: JSON.stringify(y), at: Date.now() };
}

/** A sequence of one model, sent through both gateways in turn; `sum` is what its next answer must add to. */
class Sequence {
  sum = 0;
  private sent = 0;
  constructor(
    readonly model: string,
    readonly id: SequenceId,
  ) {}

  async step(value: number, opts: { start?: boolean; end?: boolean } = {}): Promise<Outcome> {
    const start = opts.start ?? this.sent === 0;
    const gateway = gateways[this.sent++ % gateways.length];
    const out = await httpStep(base(gateway), { model: this.model, id: this.id, value, start, end: opts.end ?? false });
    if (out.ok) this.sum = (start ? 0 : this.sum) + value;
    return out;
  }

  /** A step that must give the running sum (and no state output). */
  async expectStep(value: number, opts: { start?: boolean; end?: boolean } = {}): Promise<void> {
    const expected = (opts.start ?? this.sent === 0 ? 0 : this.sum) + value;
    const out = await this.step(value, opts);
    expect(out).toEqual({ ok: true, answer: { value: expected, outputs: ['OUTPUT'] } });
  }
}

beforeAll(async () => {
  redis = await startRedis();
  kv = new Redis(redis.url);
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-schedulers-'));
  for (const m of ['simple', 'accumulator', 'sequence_sum_py']) fs.cpSync(path.join(ROOT, 'models', m), path.join(repo, m), { recursive: true });
  // `simple` with a queue delay, so that requests arriving together through both gateways batch.
  fs.appendFileSync(
    path.join(repo, 'simple/config.pbtxt'),
    '\ninstance_group [{ kind: KIND_CPU, count: 1 }]\ndynamic_batching { max_queue_delay_microseconds: 100000 }\n',
  );
  // Long enough an idle time that sequences outlive the take-over.
  for (const m of ['accumulator', 'sequence_sum_py']) {
    const file = path.join(repo, m, 'config.pbtxt');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('max_sequence_idle_microseconds: 5000000', 'max_sequence_idle_microseconds: 60000000'));
  }
  // slow_scale (python, 100 ms per batch of at most 8): a queue that is full when its scheduler dies.
  fs.cpSync(path.join(ROOT, 'test/fixtures/python/slow_scale'), path.join(repo, 'slow_scale'), { recursive: true });
  // With a queue policy (a size limit no request reaches) the batcher hands an instance no batch ahead
  // (Triton prefetches only without one), so what the workers have not started stays in the scheduler's
  // queue. Without it, full batches of 8 are handed to the busy workers' lanes at once and the queue
  // can be empty when the scheduler dies (a fresh-clone CI run: all 64 answered before the take-over).
  const slowConfig = path.join(repo, 'slow_scale/config.pbtxt');
  const withPolicy = fs
    .readFileSync(slowConfig, 'utf8')
    .replace('dynamic_batching { max_queue_delay_microseconds: 20000 }', 'dynamic_batching { max_queue_delay_microseconds: 20000 default_queue_policy { max_queue_size: 1000 } }');
  if (!withPolicy.includes('max_queue_size: 1000')) throw new Error('slow_scale config changed: update this test');
  fs.writeFileSync(slowConfig, withPolicy);
  workers = [await start('worker'), await start('worker')];
  for (const w of workers) {
    for (const m of MODELS) await roleReady(w, `/v2/models/${m}/ready`, 90_000);
    ids.set(w, await roleId(w, 'worker'));
  }
  // The first scheduler takes every lease; the second waits for one to be free.
  const first = await start('scheduler');
  ids.set(first, await roleId(first, 'scheduler'));
  for (const m of MODELS) await until(`the first scheduler holds ${m}`, async () => (await holder(m))?.id === ids.get(first), 30_000);
  const second = await start('scheduler');
  ids.set(second, await roleId(second, 'scheduler'));
  schedulers = [first, second];
  gateways = [await start('gateway'), await start('gateway')];
  for (const g of gateways) for (const m of MODELS) await roleReady(g, `/v2/models/${m}/ready`, 90_000);
}, 240_000);

afterAll(async () => {
  kv?.disconnect();
  await Promise.all(roles.map((r) => r.kill('SIGKILL')));
  await redis?.stop();
  if (repo) fs.rmSync(repo, { recursive: true, force: true });
});

describe('distributed mode: 2 gateways, 2 schedulers, 2 workers', () => {
  it('one scheduler holds each model version\'s lease; the other takes none while it lives', async () => {
    await new Promise((r) => setTimeout(r, 2000)); // several renewals, and the second scheduler's tries
    for (const m of MODELS) expect((await holder(m))?.id).toBe(ids.get(schedulers[0]));
    expect(schedulers[0].log()).toMatch(/holds the lease of 'simple' version 1 \(fence \d+\)/);
    expect(schedulers[1].log()).not.toMatch(/holds the lease/);
  });

  it('batches requests of both gateways together (batches > 1), every answer right', async () => {
    await Promise.all(range(16, (i) => inferSimple(gateways[i % 2], 1000 + 10 * i)));
    const sizes: number[] = [];
    for (const w of workers) {
      const stats = (await (await fetch(`${base(w)}/v2/models/simple/stats`)).json()) as Msg;
      sizes.push(...(stats.model_stats[0].batch_stats as Msg[]).filter((b) => Number(b.compute_infer.count) > 0).map((b) => Number(b.batch_size)));
    }
    expect(Math.max(...sizes)).toBeGreaterThan(1);
  });

  it('16 interleaved sequences each of a direct (implicit state) and an oldest (python) model give exact running sums through both gateways', async () => {
    const seqs = [
      ...range(16, (i) => new Sequence('accumulator', BigInt(100 + i))),
      ...range(16, (i) => new Sequence('sequence_sum_py', BigInt(200 + i))),
    ];
    for (let step = 0; step < 5; step++) {
      await Promise.all(seqs.map((s, i) => s.expectStep(step * 7 + i, { end: step === 4 })));
    }
  });

  it('kill -9 of the scheduler holding the leases, queue full: every accepted request is answered, the other takes over within seconds, live sequences get the lost-state error', async () => {
    const [dead, heir] = schedulers;
    const deadId = ids.get(dead)!;
    // Live sequences on the scheduler that dies (two steps each).
    const live = [
      ...range(4, (i) => new Sequence('accumulator', BigInt(300 + i))),
      ...range(4, (i) => new Sequence('sequence_sum_py', BigInt(400 + i))),
    ];
    for (let step = 0; step < 2; step++) await Promise.all(live.map((s, i) => s.expectStep(i + step)));
    const before = await holder('slow_scale');
    // 64 slow_scale requests: 100 ms per batch of 8 on 2 workers, ~0.4 s of queue when the scheduler dies.
    const load = range(64, (i) => inferSlow(gateways[i % 2], i));
    await new Promise((r) => setTimeout(r, 150));
    const killedAt = Date.now();
    await dead.kill('SIGKILL');
    const tookOver: Record<string, number> = {};
    await Promise.all(
      MODELS.map((m) =>
        until(`the second scheduler holds ${m}`, async () => {
          const h = await holder(m);
          if (!h || h.id !== ids.get(heir)) return false;
          tookOver[m] = Date.now() - killedAt;
          expect(h.fence).toBeGreaterThan(before!.fence);
          return true;
        }, 30_000),
      ),
    );
    const answers = await Promise.all(load);
    const answeredAt = Date.now() - killedAt;
    // Requests still queued when the scheduler died: answered only once the heir took them over. The
    // dead holder renewed its lease at most LEASE_TICK_MS before the kill, so no one can hold it before
    // LEASE_TTL_MS - LEASE_TICK_MS after it; batches already on the workers end within ~100 ms. (The
    // polled take-over time is not the bound: a fresh-clone CI run saw every answer land in the same
    // millisecond as the poll that noticed the new holder, and counted none of them "after".)
    const earliestTakeOver = LEASE_TTL_MS - LEASE_TICK_MS;
    const afterTakeOver = answers.filter((a) => a.at - killedAt >= earliestTakeOver).length;
    process.stdout.write(
      `take-over after kill -9 of the lease holder: ${JSON.stringify(tookOver)} ms (lease TTL ${LEASE_TTL_MS} ms); ` +
        `the 64 slow_scale requests all answered ${answeredAt} ms after the kill, ${afterTakeOver} of them ${earliestTakeOver} ms or more after it (after the take-over)\n`,
    );
    expect(answers.filter((a) => !a.ok)).toEqual([]);
    expect(afterTakeOver).toBeGreaterThan(0);
    for (const ms of Object.values(tookOver)) expect(ms).toBeLessThan(8000);
    // The live sequences lost their state with the scheduler: told so on their next request without START.
    for (const s of live) {
      const out = await s.step(1);
      expect(out).toEqual({
        ok: false,
        status: 400,
        message:
          `inference request for sequence ${s.id} to model '${s.model}' must specify the START flag on the first request of the sequence: ` +
          `its state was lost when the scheduler that held it (${deadId}) stopped; restart the sequence with START`,
      });
    }
    // Restarted with START, each goes on exactly.
    for (let step = 0; step < 3; step++) await Promise.all(live.map((s, i) => s.expectStep(10 * i + step, { start: step === 0 })));
    // New sequences and plain requests are served by the new holder.
    await Promise.all(range(8, (i) => inferSimple(gateways[i % 2], 5000 + i)));
  });

  it('kill -9 of a worker: a python sequence whose state lived on it gets the lost-state error; the accumulator goes on (its state is in the scheduler)', async () => {
    const acc = range(8, (i) => new Sequence('accumulator', BigInt(500 + i)));
    const py = range(8, (i) => new Sequence('sequence_sum_py', BigInt(600 + i)));
    for (let step = 0; step < 2; step++) await Promise.all([...acc, ...py].map((s, i) => s.expectStep(i + step)));
    const [gone, left] = workers;
    const goneId = ids.get(gone)!;
    await gone.kill('SIGKILL');
    // The scheduler drops the worker once its heartbeat is missed (3.5 s).
    await new Promise((r) => setTimeout(r, 5000));
    for (const s of acc) await s.expectStep(3);
    const outcomes = await Promise.all(py.map((s) => s.step(3)));
    const lost = outcomes.filter((o) => !o.ok);
    for (const [i, o] of outcomes.entries()) {
      if (o.ok) {
        expect(o.answer.value).toBe(py[i].sum);
        continue;
      }
      expect(o).toEqual({
        ok: false,
        status: 400,
        message:
          `inference request for sequence ${py[i].id} to model 'sequence_sum_py' must specify the START flag on the first request of the sequence: ` +
          `its state was lost when the worker that held it (${goneId}) left the cluster; restart the sequence with START`,
      });
    }
    process.stdout.write(`python sequences after kill -9 of a worker: ${lost.length} of ${py.length} lost their state (the rest lived on ${ids.get(left)})\n`);
    expect(lost.length).toBeGreaterThan(0);
    // Restarted with START, every one goes on exactly on the worker that is left.
    for (let step = 0; step < 2; step++) await Promise.all(py.map((s, i) => s.expectStep(i + step, { start: step === 0 })));
  });
});

/**
 * Redis trouble in distributed mode, through the gateways (issue 13): real processes of the built
 * CLI (`npm run build` first), a worker and a scheduler+gateway process, over a private
 * redis-server with a password, and over one that speaks TLS only (`rediss://`, its self-signed CA
 * given to Node by NODE_EXTRA_CA_CERTS). Inference over HTTP and gRPC works through each; with
 * Redis gone the gateway answers UNAVAILABLE within a second (never hangs) and serves again by
 * itself once Redis is back; a wrong password or an unverifiable server fails the start clearly.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { roleReady, startRole, type RoleProcess } from './helpers/cluster-roles';
import { inferenceClient, type Client, type Msg } from './helpers/grpc-client';
import { until } from './helpers/poll';
import { startRedis, type RedisServer } from './helpers/redis-server';
import { ROOT } from './helpers/server';

jest.setTimeout(150_000);

let repo: string;
const roles: RoleProcess[] = [];
const servers: RedisServer[] = [];
const clients: Client[] = [];

beforeAll(() => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-redis-e2e-'));
  fs.cpSync(path.join(ROOT, 'models/simple'), path.join(repo, 'simple'), { recursive: true });
  fs.appendFileSync(path.join(repo, 'simple/config.pbtxt'), '\ninstance_group [{ kind: KIND_CPU, count: 1 }]\n');
});

afterAll(async () => {
  for (const c of clients) c.close();
  await Promise.all(roles.map((r) => r.kill()));
  for (const s of servers) await s.stop();
  if (repo) fs.rmSync(repo, { recursive: true, force: true });
});

async function start(role: string, url: string, env?: NodeJS.ProcessEnv): Promise<RoleProcess> {
  const r = await startRole(role, url, repo, { env });
  roles.push(r);
  return r;
}

const range = (n: number, f: (i: number) => number): number[] => Array.from({ length: n }, (_, i) => f(i));

/** HTTP infer of `simple` with INPUT0 = base + i: [status, body, ms]. */
async function httpInfer(gateway: RoleProcess, base: number): Promise<[number, Msg, number]> {
  const started = Date.now();
  const res = await fetch(`http://127.0.0.1:${gateway.http}/v2/models/simple/infer`, {
    method: 'POST',
    signal: AbortSignal.timeout(10_000),
    body: JSON.stringify({
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: range(16, (i) => base + i) },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: range(16, (i) => i) },
      ],
    }),
  });
  return [res.status, (await res.json()) as Msg, Date.now() - started];
}

function expectAnswer([status, body]: [number, Msg, number], base: number): void {
  expect(status).toBe(200);
  const byName = new Map((body.outputs as Msg[]).map((o) => [o.name, o.data]));
  expect(byName.get('OUTPUT0')).toEqual(range(16, (i) => base + 2 * i));
  expect(byName.get('OUTPUT1')).toEqual(range(16, () => base));
}

/** gRPC infer of `simple`: the outputs, or the error's code and details; and how long it took. */
function grpcInfer(client: Client, base: number): Promise<{ outputs?: number[][]; code?: number; details?: string; ms: number }> {
  const int32 = (v: number[]): Buffer => Buffer.from(new Int32Array(v).buffer);
  const started = Date.now();
  return new Promise((resolve) => {
    client.ModelInfer(
      {
        model_name: 'simple',
        inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16] })),
        raw_input_contents: [int32(range(16, (i) => base + i)), int32(range(16, (i) => i))],
      },
      new grpc.Metadata(),
      { deadline: Date.now() + 10_000 },
      (err: grpc.ServiceError | null, res: Msg) => {
        const ms = Date.now() - started;
        if (err) return resolve({ code: err.code, details: err.details, ms });
        resolve({ outputs: (res.raw_output_contents as Buffer[]).map((b) => Array.from(new Int32Array(new Uint8Array(b).buffer))), ms });
      },
    );
  });
}

/** A role process that must fail to start: its exit code and output. */
async function failedStart(role: string, url: string, env?: NodeJS.ProcessEnv): Promise<{ code: number | null; log: string }> {
  const r = await start(role, url, env);
  const code = await new Promise<number | null>((resolve) => {
    if (r.child.exitCode !== null) return resolve(r.child.exitCode);
    const timer = setTimeout(() => resolve(null), 20_000);
    r.child.once('exit', (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  return { code, log: r.log() };
}

describe('distributed mode: Redis trouble, through a gateway', () => {
  it('works with a Redis that needs a password; Redis gone: UNAVAILABLE within a second, then served again by itself', async () => {
    const redis = await startRedis({ password: 'chaos-s3cret' });
    servers.push(redis);
    expect(redis.url).toMatch(/^redis:\/\/:chaos-s3cret@127\.0\.0\.1:\d+$/);
    const worker = await start('worker', redis.url);
    const gateway = await start('scheduler,gateway', redis.url);
    await Promise.all([roleReady(worker), roleReady(gateway)]);
    const client = inferenceClient(gateway.grpc);
    clients.push(client);

    expectAnswer(await httpInfer(gateway, 10), 10);
    expect((await grpcInfer(client, 20)).outputs).toEqual([range(16, (i) => 20 + 2 * i), range(16, () => 20)]);

    // Redis gone: every request fails UNAVAILABLE, fast.
    await redis.stop(true);
    for (let i = 0; i < 3; i++) {
      const [status, body, ms] = await httpInfer(gateway, 30);
      expect([status, body.error]).toEqual([503, expect.stringMatching(/^the cluster's Redis is unavailable: /)]);
      expect(ms).toBeLessThan(1000);
      const g = await grpcInfer(client, 30);
      expect([g.code, g.details]).toEqual([grpc.status.UNAVAILABLE, expect.stringMatching(/^the cluster's Redis is unavailable: /)]);
      expect(g.ms).toBeLessThan(1000);
    }

    // Redis back (empty): served again without restarting anything.
    await redis.restart();
    const back = Date.now();
    await until('the gateway serves again', async () => (await httpInfer(gateway, 40))[0] === 200, 10_000);
    const first = Date.now() - back;
    // Until every worker has published its entry in the emptied Redis again (each second), a request
    // may still get `no live worker ...`: served steadily once three answers in a row are right.
    let inARow = 0;
    await until('three answers in a row', async () => {
      const [status, body] = await httpInfer(gateway, 40);
      if (status !== 200) expect([status, body.error]).toEqual([503, "no live worker of the cluster serves model 'simple' version 1"]);
      inARow = status === 200 ? inARow + 1 : 0;
      return inARow === 3;
    }, 10_000);
    process.stdout.write(`password Redis: first answer ${first} ms after Redis restarted, served steadily after ${Date.now() - back} ms\n`);
    const steady = await httpInfer(gateway, 50);
    if (steady[0] !== 200) process.stdout.write(`password Redis: after three answers in a row, ${steady[0]} ${JSON.stringify(steady[1])}\n`);
    expectAnswer(steady, 50);
    expect((await grpcInfer(client, 60)).outputs).toEqual([range(16, (i) => 60 + 2 * i), range(16, () => 60)]);

    // A wrong password: the process does not start, and says why.
    const wrong = await failedStart('gateway', redis.url.replace('chaos-s3cret', 'wrong'));
    expect(wrong.code).not.toBe(0);
    expect(wrong.code).not.toBeNull();
    expect(wrong.log).toMatch(/WRONGPASS|invalid username-password/);
  });

  it('works over TLS (rediss://, the server CA in NODE_EXTRA_CA_CERTS); an unverifiable server fails the start clearly', async () => {
    const redis = await startRedis({ tls: true });
    servers.push(redis);
    expect(redis.url).toMatch(/^rediss:\/\//);
    const caFile = path.join(repo, 'redis-ca.pem');
    fs.writeFileSync(caFile, redis.ca!);
    const env = { NODE_EXTRA_CA_CERTS: caFile };
    const worker = await start('worker', redis.url, env);
    const gateway = await start('scheduler,gateway', redis.url, env);
    await Promise.all([roleReady(worker), roleReady(gateway)]);
    const client = inferenceClient(gateway.grpc);
    clients.push(client);

    expectAnswer(await httpInfer(gateway, 70), 70);
    expect((await grpcInfer(client, 80)).outputs).toEqual([range(16, (i) => 80 + 2 * i), range(16, () => 80)]);

    // Without the CA, the self-signed certificate is refused: the process does not start, and says why.
    const refused = await failedStart('gateway', redis.url);
    expect(refused.code).not.toBe(0);
    expect(refused.code).not.toBeNull();
    expect(refused.log).toMatch(/self[- ]signed certificate|unable to verify/i);
  });
});

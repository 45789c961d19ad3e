/**
 * End-to-end, distributed mode: a request's log id crosses to the worker that runs it. The
 * `log_requests` python model writes pb_utils.Logger lines in `execute`, on the worker, which
 * carry the ids of their batch's requests. A request sent without an id gets one from the
 * gateway's log (its access line names it): the worker's lines carry that same id, not one of the
 * worker's own counter. Through a gateway that assigned none (no access log, not verbose), the
 * worker's lines carry the request's cluster-unique transport id (`<gateway id>:<n>`). Real
 * processes: 2 gateways (one with --access-log), 1 scheduler, 1 worker, a private redis-server.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { roleId, roleReady, startRole, stopCluster, type RoleProcess } from './helpers/cluster-roles';
import { waitFor } from './helpers/poll';
import { startRedis, type RedisServer } from './helpers/redis-server';
import { ROOT } from './helpers/server';

jest.setTimeout(150_000);

let redis: RedisServer;
let repo: string;
const roles: RoleProcess[] = [];
let worker: RoleProcess;
let accessGateway: RoleProcess;
let plainGateway: RoleProcess;

const MODEL = '/v2/models/log_requests';

beforeAll(async () => {
  redis = await startRedis();
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-log-ids-'));
  fs.cpSync(path.join(ROOT, 'test/fixtures/python/log_requests'), path.join(repo, 'log_requests'), { recursive: true });
  const start = async (role: string, args: string[] = []): Promise<RoleProcess> => {
    const r = await startRole(role, redis.url, repo, { args });
    roles.push(r);
    return r;
  };
  worker = await start('worker');
  await start('scheduler');
  accessGateway = await start('gateway', ['--access-log', 'true']);
  plainGateway = await start('gateway');
  await Promise.all([worker, accessGateway, plainGateway].map((r) => roleReady(r, `${MODEL}/ready`, 120_000)));
}, 150_000);

afterAll(async () => {
  await stopCluster(roles, redis, repo);
});

async function infer(gateway: RoleProcess, tag: number, id?: string): Promise<void> {
  const body = { ...(id === undefined ? {} : { id }), inputs: [{ name: 'INPUT0', shape: [1, 1], datatype: 'FP32', data: [tag] }] };
  const res = await fetch(`http://127.0.0.1:${gateway.http}${MODEL}/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
}

/** The id on the worker's line for the execute of the request tagged `tag`. */
function workerIdOf(tag: number): Promise<string> {
  const re = new RegExp(`\\[request id: ([^\\]]+)\\] \\[log_requests:1\\] model\\.py:\\d+\\] log_requests execute 1 request\\(s\\) tag ${tag}$`, 'm');
  return waitFor(`the worker's execute line of tag ${tag}`, () => re.exec(worker.log())?.[1]);
}

describe('distributed mode: request ids on the worker', () => {
  it("a request without an id: the worker's lines carry the id the gateway's access line names", async () => {
    // One request through the other gateway first: a counter of the worker's own (as before)
    // would no longer give the same number as the access gateway's.
    await infer(plainGateway, 20);
    await workerIdOf(20);
    await infer(accessGateway, 21);
    const id = await workerIdOf(21);
    const access = await waitFor('the access line', () => / access HTTP POST \/v2\/models\/log_requests\/infer 200 .* model=log_requests id=(\S+)$/m.exec(accessGateway.log())?.[1]);
    expect(access).toMatch(/^nereid-\d+$/);
    expect(id).toBe(access);
    // Every line of that execute (info, warn, error) carries it.
    for (const what of ['warn', 'error']) {
      expect(worker.log()).toMatch(new RegExp(`\\[request id: ${id}\\] \\[log_requests:1\\] model\\.py:\\d+\\] log_requests ${what} tag 21$`, 'm'));
    }
  });

  it("a client's id crosses as it is", async () => {
    await infer(accessGateway, 22, 'client-22');
    expect(await workerIdOf(22)).toBe('client-22');
  });

  it('through a gateway that assigned none: the cluster-unique transport id, a new one per request', async () => {
    const gatewayId = await roleId(plainGateway, 'gateway');
    await infer(plainGateway, 23);
    await infer(plainGateway, 24);
    const [first, second] = [await workerIdOf(23), await workerIdOf(24)];
    expect(first).toMatch(new RegExp(`^${gatewayId.replace(/[.-]/g, '\\$&')}:\\d+$`));
    expect(second).toMatch(new RegExp(`^${gatewayId.replace(/[.-]/g, '\\$&')}:\\d+$`));
    expect(second).not.toBe(first);
  });
});

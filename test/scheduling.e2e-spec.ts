/**
 * End-to-end: what a busy model does with the requests waiting for it. A python model records the
 * id of every request it executes and holds its only instance for a while; meanwhile clients go
 * away (their queued requests must never run) or ask for a queue timeout shorter than the model's
 * default (honoured only where `allow_timeout_override` is set), over HTTP and gRPC.
 */
import * as http from 'node:http';
import * as grpc from '@grpc/grpc-js';
import { inferenceClient, type Msg } from './helpers/grpc-client';
import { until } from './helpers/poll';
import { executedIds, RECORD_WAIT, recordWaitVariant } from './helpers/record-wait';
import { getJson, makeRepository, postJson, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

describe('requests waiting for a busy model', () => {
  let server: Server;
  let repo: string;
  beforeAll(async () => {
    repo = makeRepository({ record_wait: RECORD_WAIT });
    recordWaitVariant(repo, 'override_allowed', 1, 'dynamic_batching { default_queue_policy { allow_timeout_override: true default_timeout_microseconds: 20000000 } }');
    recordWaitVariant(repo, 'override_refused', 1, 'dynamic_batching { default_queue_policy { default_timeout_microseconds: 20000000 } }');
    server = await startTestServer({ modelRepositories: [repo] });
  }, 60_000);
  afterAll(() => server?.close());

  const executed = (model: string): string[] => executedIds(repo, model);
  const body = (id: string, waitMs: number, shape: number[], parameters: Msg = {}) =>
    JSON.stringify({ id, inputs: [{ name: 'WAIT_MS', datatype: 'INT32', shape, data: [waitMs] }], parameters });
  const stats = async (model: string) => ((await getJson(`${server.http}/v2/models/${model}/stats`)).body as Msg).model_stats[0];
  const pending = async (model: string) => {
    const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
    return Number(new RegExp(`nv_inference_pending_request_count\\{model="${model}",version="1"\\} (\\d+)`).exec(text)?.[1]);
  };

  /** A request on its own connection; `leave()` closes the connection as a client that gives up does. */
  function client(model: string, id: string, waitMs: number) {
    const payload = body(id, waitMs, [1]);
    const req = http.request(`${server.http}/v2/models/${model}/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
    });
    const answer = new Promise<number>((resolve) => {
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', () => resolve(-1));
    });
    req.end(payload);
    return { answer, leave: () => req.destroy() };
  }

  it('never runs the requests of clients that went away while they were queued', async () => {
    const first = client('record_wait', 'A', 1500);
    await until('A to run', () => executed('record_wait').includes('A'));
    // B goes to the stub as its next batch at once (an instance takes one batch ahead);
    // C to F wait in the scheduler's queue.
    const rest = ['B', 'C', 'D', 'E', 'F'].map((id) => client('record_wait', id, 0));
    await until('four queued requests', async () => (await pending('record_wait')) === 4);
    for (const i of [0, 2, 3]) rest[i].leave(); // B, D and E
    expect(await first.answer).toBe(200);
    expect(await Promise.all(rest.map((r) => r.answer))).toEqual([-1, 200, -1, -1, 200]);
    expect(executed('record_wait')).toEqual(['A', 'C', 'F']);
    await until('the cancellations to be counted', async () => (await stats('record_wait')).inference_stats.fail.count === 3);
    const s = await stats('record_wait');
    expect(s.inference_stats.success.count).toBe(3);
    expect(s.execution_count).toBe(3);
    const metrics = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
    expect(metrics).toContain('nv_inference_request_failure{model="record_wait",reason="CANCELED",version="1"} 3');
  }, 30_000);

  it("honours a request's own queue timeout (HTTP and gRPC) only where allow_timeout_override is set", async () => {
    const grpcClient = inferenceClient(server.grpcPort);
    const grpcInfer = (model: string, id: string, timeoutUs: number): Promise<grpc.ServiceError | null> =>
      new Promise((resolve) => {
        const request = {
          model_name: model,
          id,
          inputs: [{ name: 'WAIT_MS', datatype: 'INT32', shape: [1, 1], contents: { int_contents: [0] } }],
          parameters: { timeout: { int64_param: String(timeoutUs) } },
        };
        grpcClient.ModelInfer(request, (err: grpc.ServiceError | null) => resolve(err));
      });
    try {
      const busy = ['override_allowed', 'override_refused'].map((m) => postJson(`${server.http}/v2/models/${m}/infer`, body('busy', 1500, [1, 1])));
      const busyDoneAt = Promise.all(busy).then(() => Date.now());
      await until('both models to run', () => executed('override_allowed').includes('busy') && executed('override_refused').includes('busy'));
      const timeout = { timeout: 200_000 }; // µs, as tritonclient's `timeout=` sends it
      const [httpAllowed, grpcAllowed, plainAllowed, httpRefused, grpcRefused] = [
        postJson(`${server.http}/v2/models/override_allowed/infer`, body('http-timeout', 0, [1, 1], timeout)),
        grpcInfer('override_allowed', 'grpc-timeout', 200_000),
        postJson(`${server.http}/v2/models/override_allowed/infer`, body('no-timeout', 0, [1, 1])),
        postJson(`${server.http}/v2/models/override_refused/infer`, body('http-timeout', 0, [1, 1], timeout)),
        grpcInfer('override_refused', 'grpc-timeout', 200_000),
      ];
      const rejected = await httpAllowed;
      expect(rejected).toMatchObject({ status: 503, body: { error: 'Request timeout expired' } });
      expect(await grpcAllowed).toMatchObject({ code: grpc.status.UNAVAILABLE, details: 'Request timeout expired' });
      // Both expired while the busy requests were still running.
      const rejectedAt = Date.now();
      expect(rejectedAt).toBeLessThan(await busyDoneAt);
      expect((await plainAllowed).status).toBe(200);
      expect((await httpRefused).status).toBe(200);
      expect(await grpcRefused).toBeNull();
      expect((await Promise.all(busy)).map((r) => r.status)).toEqual([200, 200]);
      expect(executed('override_allowed')).toEqual(['busy', 'no-timeout']);
      expect(executed('override_refused').sort()).toEqual(['busy', 'grpc-timeout', 'http-timeout']);
    } finally {
      grpcClient.close();
    }
  }, 30_000);
});

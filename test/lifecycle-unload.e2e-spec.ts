import type { LifecycleEvent, NereidCore, RepositoryIndexEntry } from '@nereid/core';
import { until } from './helpers/poll';
import { makeRepository, postJson, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

describe('an unload under way', () => {
  let server: Server;

  beforeAll(async () => {
    const repo = makeRepository({ slow_scale: 'test/fixtures/python/slow_scale' });
    server = await startTestServer({ modelRepositories: [repo], modelControlMode: 'explicit', loadModels: ['slow_scale'], allowMetrics: false });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('shows UNLOADING while requests in flight finish, then UNAVAILABLE unloaded; new requests are refused', async () => {
    const events: (LifecycleEvent & { at: number })[] = [];
    let during: RepositoryIndexEntry[] | undefined;
    let refused: { status: number; body: { error?: string } } | undefined;
    const infer = () =>
      postJson(`${server.http}/v2/models/slow_scale/infer`, { inputs: [{ name: 'X', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }] });
    (server.core as NereidCore).onLifecycle((e) => {
      events.push({ ...e, at: performance.now() });
      if (e.state !== 'UNLOADING') return;
      // Each execution sleeps 100 ms: the drain outlasts these two requests.
      void server.core.repositoryIndex(false).then((rows) => (during = rows));
      void infer().then((r) => (refused = r));
    });
    // 20 requests: three executions of up to 8 requests, one at a time.
    const answeredAt: number[] = [];
    const inflight = Array.from({ length: 20 }, () => infer().then((r) => (answeredAt.push(performance.now()), r)));
    // Once the first execution has answered, the others are queued or running.
    await Promise.race(inflight);
    const unload = postJson(`${server.http}/v2/repository/models/slow_scale/unload`);
    const answers = await Promise.all(inflight);
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(answers[0].body.outputs[0].data).toEqual([2, 4, 6, 8]);
    // Some of them were answered while the model was UNLOADING.
    const unloading = events.find((e) => e.state === 'UNLOADING')!.at;
    expect(answeredAt.filter((t) => t > unloading).length).toBeGreaterThan(0);
    expect((await unload).status).toBe(200);
    await until('the index and the refused request', () => during !== undefined && refused !== undefined);
    expect(during).toEqual([{ name: 'slow_scale', version: '1', state: 'UNLOADING' }]);
    expect(refused!.status).toBe(404);
    expect(refused!.body.error).toBe("Request for unknown model: 'slow_scale' has no available versions");
    expect(events.map((e) => e.state)).toEqual(['UNLOADING', 'UNAVAILABLE']);
    expect((await postJson(`${server.http}/v2/repository/index`, {})).body).toEqual([
      { name: 'slow_scale', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' },
    ]);
  });
});

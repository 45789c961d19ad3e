import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { LifecycleEvent, NereidCore } from '@nereid/core';
import { until } from './helpers/poll';
import { makeRepository, postJson, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

describe('a reload while sequences are live', () => {
  let server: Server;
  let repo: string;
  const events: LifecycleEvent[] = [];

  beforeAll(async () => {
    repo = makeRepository({ accumulator: 'models/accumulator' });
    server = await startTestServer({ modelRepositories: [repo], modelControlMode: 'explicit', loadModels: ['accumulator'], allowMetrics: false });
    (server.core as NereidCore).onLifecycle((e) => events.push(e));
  });

  afterAll(async () => {
    await server?.close();
  });

  const send = async (id: number, value: number, flags: { start?: boolean; end?: boolean } = {}): Promise<{ status: number; sum?: number; error?: string }> => {
    const r = await postJson(`${server.http}/v2/models/accumulator/infer`, {
      parameters: { sequence_id: id, sequence_start: flags.start ?? false, sequence_end: flags.end ?? false },
      inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [value] }],
    });
    return { status: r.status, sum: r.body?.outputs?.[0]?.data?.[0], error: r.body?.error };
  };

  it('sequences started on the old version finish there with their running sum; new ones start on the new version', async () => {
    expect(await send(42, 5, { start: true })).toEqual({ status: 200, sum: 5, error: undefined });
    // A changed file: the load is a real reload.
    mkdirSync(path.join(repo, 'accumulator', 'configs'), { recursive: true });
    writeFileSync(path.join(repo, 'accumulator', 'configs', 'touch.txt'), '1');
    const reload = postJson(`${server.http}/v2/repository/models/accumulator/load`);
    await until('the new runtime to serve', () => events.some((e) => e.state === 'READY'));
    const old = events.find((e) => e.state === 'UNLOADING');
    expect(old?.key).toBeDefined();
    // The old runtime drains: sequence 42 is still live on it.
    expect(await send(43, 100, { start: true })).toMatchObject({ status: 200, sum: 100 });
    expect(await send(42, 6)).toMatchObject({ status: 200, sum: 11 });
    expect(events.some((e) => e.key === old!.key && e.state === 'UNAVAILABLE')).toBe(false);
    expect(await send(42, 7, { end: true })).toMatchObject({ status: 200, sum: 18 });
    expect((await reload).status).toBe(200);
    expect(events.some((e) => e.key === old!.key && e.state === 'UNAVAILABLE')).toBe(true);
    expect(await send(43, 1, { end: true })).toMatchObject({ status: 200, sum: 101 });
    // A sequence that never began is refused in Triton's words, by the new runtime.
    const stray = await send(44, 1);
    expect(stray.status).toBe(400);
    expect(stray.error).toMatch(/must specify the START flag/);
  });
});

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { LifecycleEvent, NereidCore } from '@nereid/core';
import { sleep, until } from './helpers/poll';
import { getJson, postJson, startTestServer } from './helpers/server';
import { removeVersion, stampRequest, writeConfig, writeVersion } from './reload-models';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const POLL_SECS = 0.1;

describe('model lifecycle in poll mode', () => {
  let server: Server;
  let repo: string;
  const events: LifecycleEvent[] = [];

  const answer = async (): Promise<{ status: number; stamp?: number; version?: string; error?: string }> => {
    const r = await postJson(`${server.http}/v2/models/stamp/infer`, stampRequest(0));
    return { status: r.status, stamp: r.body?.outputs?.[0]?.data?.[0], version: r.body?.model_version, error: r.body?.error };
  };
  const index = async (): Promise<unknown[]> => (await postJson(`${server.http}/v2/repository/index`, {})).body;

  beforeAll(async () => {
    repo = mkdtempSync(path.join(tmpdir(), 'nereid-lifecycle-'));
    writeConfig(repo, { name: 'stamp' });
    writeVersion(repo, 'stamp', 1, 1);
    server = await startTestServer({
      modelRepositories: [repo],
      modelControlMode: 'poll',
      repositoryPollSecs: POLL_SECS,
      allowMetrics: false,
    });
    (server.core as NereidCore).onLifecycle((e) => events.push(e));
  });

  afterAll(async () => {
    await server?.close();
  });

  it('a corrupt new version is reported in the index and the version that served keeps serving', async () => {
    expect(await answer()).toMatchObject({ status: 200, stamp: 1, version: '1' });
    writeVersion(repo, 'stamp', 2, 'this is not an ONNX model');
    await until('version 2 to fail', () => events.some((e) => e.version === 2 && e.state === 'UNAVAILABLE'));
    const rows = await index();
    expect(rows).toContainEqual({ name: 'stamp', version: '1', state: 'READY' });
    expect(rows).toContainEqual(expect.objectContaining({ name: 'stamp', version: '2', state: 'UNAVAILABLE', reason: expect.any(String) }));
    expect(await answer()).toMatchObject({ status: 200, stamp: 1, version: '1' });
    // A version that is not served answers Triton's words.
    const v2 = await postJson(`${server.http}/v2/models/stamp/versions/2/infer`, stampRequest(0));
    expect(v2.status).toBe(503);
    expect(v2.body.error).toBe("Request for unknown model: 'stamp' version 2 is not at ready state");
  });

  it('a model whose load failed is not tried again until its files change', async () => {
    const attempts = (): number => events.filter((e) => e.version === 2 && e.state === 'LOADING').length;
    expect(attempts()).toBe(1);
    await sleep(POLL_SECS * 1000 * 6);
    expect(attempts()).toBe(1);
    writeVersion(repo, 'stamp', 2, 2);
    await until('version 2 to serve', async () => (await answer()).stamp === 2);
    expect(attempts()).toBe(2);
    await until('version 1 to be unloaded', () => events.some((e) => e.version === 1 && e.state === 'UNAVAILABLE'));
    expect(await index()).toEqual([
      { name: 'stamp', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' },
      { name: 'stamp', version: '2', state: 'READY' },
    ]);
  });

  it('emits each runtime through LOADING, READY, UNLOADING, UNAVAILABLE', () => {
    const byKey = new Map<string, string[]>();
    for (const e of events) if (e.key) byKey.set(e.key, [...(byKey.get(e.key) ?? []), e.state]);
    const v1 = [...byKey.entries()].filter(([k]) => k.startsWith('stamp/1/')).map(([, s]) => s);
    // v1 was loaded before the listener subscribed: its retirement is what it saw.
    expect(v1).toEqual([['UNLOADING', 'UNAVAILABLE']]);
    const v2 = [...byKey.entries()].filter(([k]) => k.startsWith('stamp/2/')).map(([, s]) => s);
    expect(v2).toEqual([['LOADING', 'UNAVAILABLE'], ['LOADING', 'READY']]);
    expect(events.find((e) => e.state === 'UNAVAILABLE' && e.version === 1)?.reason).toBe('unloaded');
  });

  it('a changed file in a version folder reloads that version; a removed version is retired', async () => {
    writeVersion(repo, 'stamp', 2, 20);
    await until('the changed version 2 to serve', async () => (await answer()).stamp === 20);
    removeVersion(repo, 'stamp', 2);
    await until('version 1 to serve again', async () => (await answer()).stamp === 1);
    await until('version 2 to be unloaded', async () =>
      JSON.stringify(await index()) === JSON.stringify([
        { name: 'stamp', version: '1', state: 'READY' },
        { name: 'stamp', version: '2', state: 'UNAVAILABLE', reason: 'unloaded' },
      ]));
  });

  it('polls that find no change load nothing; a config change reloads', async () => {
    const count = (state: string): number => events.filter((e) => e.state === state).length;
    const before = count('LOADING');
    const ready = count('READY');
    await sleep(POLL_SECS * 1000 * 4);
    expect(count('LOADING')).toBe(before);
    writeConfig(repo, { name: 'stamp', extra: 'dynamic_batching { max_queue_delay_microseconds: 100 }' });
    await until('the new config to serve', () => count('READY') === ready + 1);
    expect(count('LOADING')).toBe(before + 1);
    expect(await answer()).toMatchObject({ status: 200, stamp: 1 });
    const config = await getJson(`${server.http}/v2/models/stamp/config`);
    expect(config.body).toMatchObject({ dynamic_batching: { max_queue_delay_microseconds: 100 } });
  });
});

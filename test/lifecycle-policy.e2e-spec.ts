import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { postJson, startTestServer } from './helpers/server';
import { stampRequest, writeConfig, writeVersion } from './reload-models';

type Server = Awaited<ReturnType<typeof startTestServer>>;

/** The stamp model's config as a load request's JSON override. */
const override = (policy: unknown): string =>
  JSON.stringify({
    name: 'stamp',
    backend: 'onnxruntime',
    max_batch_size: 8,
    input: [{ name: 'X', data_type: 'TYPE_FP32', dims: [1] }],
    output: [{ name: 'Y', data_type: 'TYPE_FP32', dims: [1] }],
    version_policy: policy,
  });

describe('version policies on every reload (explicit mode)', () => {
  let server: Server;

  beforeAll(async () => {
    const repo = mkdtempSync(path.join(tmpdir(), 'nereid-policy-'));
    writeConfig(repo, { name: 'stamp' });
    writeVersion(repo, 'stamp', 1, 1);
    writeVersion(repo, 'stamp', 2, 2);
    server = await startTestServer({ modelRepositories: [repo], modelControlMode: 'explicit', loadModels: ['stamp'], allowMetrics: false });
  });

  afterAll(async () => {
    await server?.close();
  });

  const answer = async (version?: number): Promise<{ status: number; stamp?: number; error?: string }> => {
    const url = version === undefined ? 'stamp' : `stamp/versions/${version}`;
    const r = await postJson(`${server.http}/v2/models/${url}/infer`, stampRequest(0));
    return { status: r.status, stamp: r.body?.outputs?.[0]?.data?.[0], error: r.body?.error };
  };
  const load = (config?: string) =>
    postJson(`${server.http}/v2/repository/models/stamp/load`, config === undefined ? undefined : { parameters: { config } });
  const index = async () => (await postJson(`${server.http}/v2/repository/index`, {})).body;

  it('serves what each load\'s policy names and retires the rest', async () => {
    expect(await answer()).toMatchObject({ status: 200, stamp: 2 });

    expect((await load(override({ specific: { versions: [1] } }))).status).toBe(200);
    expect(await answer()).toMatchObject({ status: 200, stamp: 1 });
    expect(await answer(2)).toEqual({ status: 503, error: "Request for unknown model: 'stamp' version 2 is not at ready state" });
    expect(await index()).toEqual([
      { name: 'stamp', version: '1', state: 'READY' },
      { name: 'stamp', version: '2', state: 'UNAVAILABLE', reason: 'unloaded' },
    ]);

    expect((await load(override({ all: {} }))).status).toBe(200);
    expect(await answer(1)).toMatchObject({ status: 200, stamp: 1 });
    expect(await answer(2)).toMatchObject({ status: 200, stamp: 2 });
    expect(await answer()).toMatchObject({ status: 200, stamp: 2 });

    // Back to config.pbtxt (latest 1).
    expect((await load()).status).toBe(200);
    expect(await answer()).toMatchObject({ status: 200, stamp: 2 });
    expect(await answer(1)).toEqual({ status: 503, error: "Request for unknown model: 'stamp' version 1 is not at ready state" });
    expect(await answer(3)).toEqual({ status: 404, error: "Request for unknown model: 'stamp' version 3 is not found" });
  });
});

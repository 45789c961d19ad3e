import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { getJson, makeRepository, postJson, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const request = {
  inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, shape: [1, 16], datatype: 'INT32', data: Array(16).fill(4) })),
};

describe('model control: explicit mode', () => {
  let server: Server;
  let repo: string;

  beforeAll(async () => {
    repo = makeRepository({ simple: 'models/simple', other: 'models/simple' });
    writeFileSync(path.join(repo, 'other', 'config.pbtxt'), '');
    server = await startTestServer({ modelRepositories: [repo], modelControlMode: 'explicit', loadModels: ['simple'] });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('loads only the --load-model models at start-up', async () => {
    const index = await postJson(`${server.http}/v2/repository/index`, {});
    expect(index.body).toEqual([{ name: 'other' }, { name: 'simple', version: '1', state: 'READY' }]);
  });

  it('loads a model with a partial config, completing it from the ONNX file', async () => {
    const r = await postJson(`${server.http}/v2/repository/models/other/load`);
    expect(r.status).toBe(200);
    const cfg = await getJson(`${server.http}/v2/models/other/config`);
    expect(cfg.body).toMatchObject({
      name: 'other',
      backend: 'onnxruntime',
      input: [expect.objectContaining({ name: 'INPUT0', data_type: 'TYPE_INT32' }), expect.anything()],
    });
    const inf = await postJson(`${server.http}/v2/models/other/infer`, request);
    expect(inf.status).toBe(200);
  });

  it('unloads and reports the reason', async () => {
    expect((await postJson(`${server.http}/v2/repository/models/other/unload`)).status).toBe(200);
    const index = await postJson(`${server.http}/v2/repository/index`, {});
    expect(index.body).toContainEqual({ name: 'other', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' });
    const inf = await postJson(`${server.http}/v2/models/other/infer`, request);
    expect(inf.status).toBe(404);
  });

  it('fails to load an unknown model with a clear error', async () => {
    const r = await postJson(`${server.http}/v2/repository/models/ghost/load`);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/failed to load 'ghost'/);
  });

  it('loads with a config override', async () => {
    const config = JSON.stringify({
      name: 'simple',
      backend: 'onnxruntime',
      max_batch_size: 4,
      input: [
        { name: 'INPUT0', data_type: 'TYPE_INT32', dims: [16] },
        { name: 'INPUT1', data_type: 'TYPE_INT32', dims: [16] },
      ],
      output: [
        { name: 'OUTPUT0', data_type: 'TYPE_INT32', dims: [16] },
        { name: 'OUTPUT1', data_type: 'TYPE_INT32', dims: [16] },
      ],
    });
    const r = await postJson(`${server.http}/v2/repository/models/simple/load`, { parameters: { config } });
    expect(r.status).toBe(200);
    const cfg = await getJson(`${server.http}/v2/models/simple/config`);
    expect((cfg.body as { max_batch_size: number }).max_batch_size).toBe(4);
    const bad = await postJson(`${server.http}/v2/repository/models/simple/load`, { parameters: { config: '{"nonsense_field": 1}' } });
    expect(bad.status).toBe(400);
    expect((await postJson(`${server.http}/v2/models/simple/infer`, request)).status).toBe(200);
  });

  it('reloads under load without dropping a request', async () => {
    let stop = false;
    let ok = 0;
    const failures: string[] = [];
    const loop = async () => {
      while (!stop) {
        const r = await postJson(`${server.http}/v2/models/simple/infer`, request);
        if (r.status === 200) ok++;
        else failures.push(JSON.stringify(r.body));
      }
    };
    const loops = [loop(), loop(), loop(), loop()];
    for (let i = 0; i < 3; i++) {
      // Touch the model so the load is a real reload (changed files).
      mkdirSync(path.join(repo, 'simple', 'configs'), { recursive: true });
      writeFileSync(path.join(repo, 'simple', 'configs', `touch${i}.txt`), String(i));
      const r = await postJson(`${server.http}/v2/repository/models/simple/load`);
      expect(r.status).toBe(200);
    }
    stop = true;
    await Promise.all(loops);
    expect(failures).toEqual([]);
    expect(ok).toBeGreaterThan(0);
  });
});

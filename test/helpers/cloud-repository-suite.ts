import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { useCloudEmulator, type CloudEmulator } from './cloud-emulators';
import { until } from './poll';
import { getJson, MODELS, postJson, startError, startTestServer } from './server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const request = {
  inputs: [
    { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, (_, i) => i) },
    { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: Array(16).fill(1) },
  ],
};

const simpleConfig = readFileSync(path.join(MODELS, 'simple', 'config.pbtxt'), 'utf8');
const simpleModel = readFileSync(path.join(MODELS, 'simple', '1', 'model.onnx'));
/** A config.pbtxt the parser refuses, naming the file it read. */
const brokenConfig = 'name: "broken"\nplatform: "onnxruntime_onnx"\ninput [ { name: \n';

/**
 * One end-to-end suite for every cloud store: a Nereid in poll mode (1 s) serves a repository
 * held by a local emulator started once for the file, and follows changes made in the bucket.
 */
export function describeCloudRepository(store: string, start: () => Promise<CloudEmulator>): { emulator: () => CloudEmulator } {
  const emu = useCloudEmulator(start);

  describe(`${store} repository in poll mode`, () => {
    let server: Server;

    beforeAll(async () => {
      await emu().upload(path.join(MODELS, 'simple'), 'repo/simple');
      await emu().upload(path.join(MODELS, 'add_sub'), 'repo/add_sub');
      await emu().put('repo/noversions/config.pbtxt', simpleConfig.replace('name: "simple"', 'name: "noversions"'));
      await emu().put('repo/broken/config.pbtxt', brokenConfig);
      await emu().put('repo/broken/1/model.onnx', simpleModel);
      server = await startTestServer({ modelRepositories: [emu().repository('repo')], modelControlMode: 'poll', repositoryPollSecs: 1 });
    });
    afterAll(async () => {
      await server?.close();
    });

    it('serves a model from the bucket', async () => {
      const r = await postJson(`${server.http}/v2/models/simple/infer`, request);
      expect(r.status).toBe(200);
      expect(r.body.model_version).toBe('1');
      expect(r.body.outputs[0].data).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
    });

    it('serves a python model from the bucket', async () => {
      const inputs = ['add_sub_input0', 'add_sub_input1'].map((name, i) => ({ name, shape: [4], datatype: 'FP32', data: [1, 2, 3, 4].map((v) => v * (i + 1)) }));
      const r = await postJson(`${server.http}/v2/models/add_sub/infer`, { inputs });
      expect(r.status).toBe(200);
      expect(r.body.outputs.find((o: { name: string }) => o.name === 'added_output').data).toEqual([3, 6, 9, 12]);
      const index = await postJson(`${server.http}/v2/repository/index`, {});
      expect(index.body).toContainEqual({ name: 'add_sub', version: '1', state: 'READY' });
    });

    it('reports a model without version folders', async () => {
      const index = await postJson(`${server.http}/v2/repository/index`, {});
      const row = (index.body as { name: string; state?: string; reason?: string }[]).find((m) => m.name === 'noversions');
      expect(row).toMatchObject({ state: 'UNAVAILABLE' });
      expect(row?.reason).toMatch(/version/);
      expect(row?.reason).not.toMatch(/nereid-(s3|as|gs)-/);
    });

    it('names the bucket, never the local cache, in the reason of a broken config', async () => {
      const index = await postJson(`${server.http}/v2/repository/index`, {});
      const row = (index.body as { name: string; state?: string; reason?: string }[]).find((m) => m.name === 'broken');
      expect(row).toMatchObject({ state: 'UNAVAILABLE' });
      expect(row?.reason).toContain(`${emu().repository('repo')}/broken/config.pbtxt`);
      expect(JSON.stringify(index.body)).not.toMatch(/\/tmp\/|nereid-(s3|as|gs)-/);
    });

    it('reloads a model whose config changed in the bucket', async () => {
      await emu().put('repo/simple/config.pbtxt', simpleConfig.replace('max_batch_size: 8', 'max_batch_size: 4'));
      await until('the changed config', async () => {
        const cfg = await getJson(`${server.http}/v2/models/simple/config`);
        return (cfg.body as { max_batch_size?: number }).max_batch_size === 4;
      });
      expect((await postJson(`${server.http}/v2/models/simple/infer`, request)).status).toBe(200);
    });

    it('serves a version folder added to the bucket', async () => {
      await emu().put('repo/simple/2/model.onnx', simpleModel);
      await until('version 2', async () => (await postJson(`${server.http}/v2/models/simple/infer`, request)).body.model_version === '2');
    });

    it('unloads a model deleted from the bucket', async () => {
      for (const key of ['repo/simple/config.pbtxt', 'repo/simple/1/model.onnx', 'repo/simple/2/model.onnx']) await emu().remove(key);
      await until('the model unloaded', async () => (await getJson(`${server.http}/v2/models/simple/ready`)).status !== 200);
      const r = await postJson(`${server.http}/v2/models/simple/infer`, request);
      expect(r.status).not.toBe(200);
    });
  });

  describe(`${store} repository in explicit mode`, () => {
    it('loads a model put in the bucket after start-up', async () => {
      const server = await startTestServer({ modelRepositories: [emu().repository('explicit')], modelControlMode: 'explicit' });
      try {
        await emu().upload(path.join(MODELS, 'simple'), 'explicit/simple');
        const load = await postJson(`${server.http}/v2/repository/models/simple/load`);
        expect(load.status).toBe(200);
        expect((await postJson(`${server.http}/v2/models/simple/infer`, request)).status).toBe(200);
        // A load error names the file in the bucket, never the local cache.
        await emu().put('explicit/broken/config.pbtxt', brokenConfig);
        await emu().put('explicit/broken/1/model.onnx', simpleModel);
        const broken = await postJson(`${server.http}/v2/repository/models/broken/load`);
        expect(broken.status).toBe(400);
        expect(broken.body.error).toMatch(/^failed to load 'broken', /);
        expect(broken.body.error).toContain(`${emu().repository('explicit')}/broken/config.pbtxt`);
        expect(broken.body.error).not.toMatch(/\/tmp\/|nereid-(s3|as|gs)-/);
      } finally {
        await server.close();
      }
    });
  });

  describe(`${store} repository that cannot be read`, () => {
    it('fails start-up naming the repository, without credentials', async () => {
      const url = emu().repository('repo').replace('/models', '/no-such-bucket');
      const err = await startError({ modelRepositories: [url] });
      expect(err?.message).toContain(`failed to read model repository '${url}': `);
      for (const secret of Object.values(emu().env)) {
        if (secret.length > 8) expect(err?.message).not.toContain(secret);
      }
    });
  });

  return { emulator: emu };
}

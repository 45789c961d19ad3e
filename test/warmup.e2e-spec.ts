import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { LifecycleEvent, NereidCore, RepositoryIndexEntry } from '@nereid/core';
import { getJson, makeRepository, postJson, startTestServer } from './helpers/server';
import { stampRequest, writeConfig, writeVersion } from './reload-models';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const sample = (name: string, batch: number, input: string, count = 0): string =>
  `{ name: "${name}" batch_size: ${batch} count: ${count} inputs { key: "X" value: { data_type: TYPE_FP32 dims: [ 1 ] ${input} } } }`;

function floats(...values: number[]): Buffer {
  return Buffer.from(new Float32Array(values).buffer);
}

describe('model warmup', () => {
  let server: Server;
  let repo: string;
  const events: LifecycleEvent[] = [];

  beforeAll(async () => {
    repo = makeRepository({ counter: 'test/fixtures/python/counter', execute_raises: 'test/fixtures/python/execute_raises' });
    // Every kind of sample data, batched, more than once.
    writeConfig(repo, {
      name: 'warm',
      extra: `model_warmup [ ${[sample('zeros', 4, 'zero_data: true', 2), sample('random', 1, 'random_data: true'), sample('file', 2, 'input_data_file: "x.bin"')].join(', ')} ]`,
    });
    writeVersion(repo, 'warm', 1, 7);
    mkdirSync(path.join(repo, 'warm', 'warmup'));
    writeFileSync(path.join(repo, 'warm', 'warmup', 'x.bin'), floats(3));
    // A data file shorter than the sample: the load fails with the sample's name.
    writeConfig(repo, { name: 'short', extra: `model_warmup [ ${sample('short file', 1, 'input_data_file: "x.bin"')} ]` });
    writeVersion(repo, 'short', 1, 1);
    mkdirSync(path.join(repo, 'short', 'warmup'));
    writeFileSync(path.join(repo, 'short', 'warmup', 'x.bin'), Buffer.from([1, 2]));
    // The counter counts the requests its stub served: three warmup runs on each of two instances.
    const counter = readFileSync(path.join(repo, 'counter', 'config.pbtxt'), 'utf8');
    writeFileSync(
      path.join(repo, 'counter', 'config.pbtxt'),
      `${counter}\ninstance_group [ { count: 2 kind: KIND_CPU } ]\n` +
        'model_warmup [ { name: "three" batch_size: 1 count: 3 inputs { key: "IN" value: { data_type: TYPE_INT64 dims: [ 1 ] zero_data: true } } } ]\n',
    );
    // A passive instance (it takes no requests) runs the samples too: here it fails them.
    mkdirSync(path.join(repo, 'standby_fails', '1'), { recursive: true });
    writeFileSync(
      path.join(repo, 'standby_fails', 'config.pbtxt'),
      [
        'backend: "python"',
        'max_batch_size: 0',
        'input [ { name: "IN" data_type: TYPE_INT64 dims: [ 1 ] } ]',
        'output [ { name: "OUT" data_type: TYPE_INT64 dims: [ 1 ] } ]',
        'instance_group [ { name: "active" count: 1 kind: KIND_CPU }, { name: "standby" count: 1 kind: KIND_CPU passive: true } ]',
        'model_warmup [ { name: "w" batch_size: 1 inputs { key: "IN" value: { data_type: TYPE_INT64 dims: [ 1 ] zero_data: true } } } ]',
      ].join('\n'),
    );
    writeFileSync(
      path.join(repo, 'standby_fails', '1', 'model.py'),
      [
        'import triton_python_backend_utils as pb_utils',
        'class TritonPythonModel:',
        '    def initialize(self, args):',
        '        self.name = args["model_instance_name"]',
        '    def execute(self, requests):',
        '        if self.name.startswith("standby"):',
        '            raise RuntimeError("warmed on " + self.name)',
        '        return [pb_utils.InferenceResponse([pb_utils.get_input_tensor_by_name(r, "IN")]) for r in requests]',
        '',
      ].join('\n'),
    );
    mkdirSync(path.join(repo, 'execute_raises', 'warmup'));
    writeFileSync(path.join(repo, 'execute_raises', 'warmup', 'negative.bin'), floats(-1));
    server = await startTestServer({
      modelRepositories: [repo],
      modelControlMode: 'explicit',
      loadModels: ['warm', 'execute_raises'],
      allowMetrics: false,
    });
    (server.core as NereidCore).onLifecycle((e) => events.push(e));
  });

  afterAll(async () => {
    await server?.close();
  });

  it('runs zero, random and file samples before the version is READY, outside its statistics', async () => {
    const r = await postJson(`${server.http}/v2/models/warm/infer`, stampRequest(1));
    expect(r.status).toBe(200);
    expect(r.body.outputs[0].data).toEqual([8]);
    const stats = await getJson(`${server.http}/v2/models/warm/stats`);
    expect((stats.body as { model_stats: { inference_count: number }[] }).model_stats[0].inference_count).toBe(1);
  });

  it('a sample that cannot be built fails the load with its name', async () => {
    const r = await postJson(`${server.http}/v2/repository/models/short/load`);
    expect(r.status).toBe(400);
    expect(r.body.error).toBe(
      "failed to load 'short', version 1: failed to run warmup sample 'short file': warmup setting expects 4 bytes, but the data provided from x.bin only has 2 bytes",
    );
    const index = (await postJson(`${server.http}/v2/repository/index`, {})).body as RepositoryIndexEntry[];
    expect(index).toContainEqual(expect.objectContaining({ name: 'short', version: '1', state: 'UNAVAILABLE', reason: expect.stringContaining("failed to run warmup sample 'short file'") }));
  });

  it('every instance runs the samples, count times, and the index shows LOADING meanwhile', async () => {
    const seen: (RepositoryIndexEntry[] | undefined)[] = [];
    const off = (server.core as NereidCore).onLifecycle((e) => {
      if (e.model === 'counter' && e.state === 'LOADING') void server.core.repositoryIndex(false).then((rows) => seen.push(rows));
    });
    expect((await postJson(`${server.http}/v2/repository/models/counter/load`)).status).toBe(200);
    off();
    expect(seen[0]).toContainEqual({ name: 'counter', version: '1', state: 'LOADING' });
    // The first request each instance (stub process) serves is its fourth.
    const firstByPid = new Map<string, number>();
    for (let i = 0; i < 40 && firstByPid.size < 2; i++) {
      const rs = await Promise.all(
        [0, 1].map(() =>
          postJson(`${server.http}/v2/models/counter/infer`, { inputs: [{ name: 'IN', shape: [1], datatype: 'INT64', data: [0] }] }),
        ),
      );
      for (const r of rs) {
        const [count, pid] = r.body.outputs[0].data as number[];
        if (!firstByPid.has(String(pid))) firstByPid.set(String(pid), count);
      }
    }
    expect([...firstByPid.values()]).toEqual([4, 4]);
  });

  it('passive instances run the samples too', async () => {
    const r = await postJson(`${server.http}/v2/repository/models/standby_fails/load`);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/^failed to load 'standby_fails', version 1: failed to run warmup sample 'w': .*warmed on standby_0/);
  });

  it('a reload whose warmup fails keeps the old version serving and says why', async () => {
    const config = JSON.stringify({
      name: 'execute_raises',
      backend: 'python',
      max_batch_size: 0,
      input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [1] }],
      output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [1] }],
      model_warmup: [{ name: 'negative', batch_size: 1, inputs: { INPUT0: { data_type: 'TYPE_FP32', dims: [1], input_data_file: 'negative.bin' } } }],
    });
    const before = events.length;
    const r = await postJson(`${server.http}/v2/repository/models/execute_raises/load`, { parameters: { config } });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/^failed to load 'execute_raises', version 1: failed to run warmup sample 'negative': .*execute exploded on -1/);
    const inf = await postJson(`${server.http}/v2/models/execute_raises/infer`, { inputs: [{ name: 'INPUT0', shape: [1], datatype: 'FP32', data: [2] }] });
    expect(inf.status).toBe(200);
    expect(inf.body.outputs[0].data).toEqual([2]);
    expect(events.slice(before).map((e) => e.state)).toEqual(['LOADING', 'UNAVAILABLE']);
    expect((await postJson(`${server.http}/v2/repository/index`, {})).body).toContainEqual({ name: 'execute_raises', version: '1', state: 'READY' });
  });
});

/**
 * End-to-end: the statistics extension's `memory_usage` ("the memory usage detected during model
 * loading"): an ONNX model shows what opening its sessions grew the server by, a python model its
 * stubs' resident memory after `initialize`, summed over its instances; an ensemble (no instances)
 * and a model no longer loaded show none. HTTP JSON and gRPC in Triton's shape.
 */
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { call, inferenceClient, type Msg } from './helpers/grpc-client';
import { getJson, makeRepository, postJson, ROOT, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;
const FIX = path.join(ROOT, 'test/fixtures/python');
const MiB = 1024 * 1024;

describe('statistics: memory usage detected during model loading', () => {
  let server: Server;
  beforeAll(async () => {
    const repo = makeRepository({
      // mlp: 4 MiB of weights, so opening its session grows the server measurably; a model as small
      // as `simple` (324 bytes) may open in memory the allocator already holds, and shows no entry.
      mlp: 'models/mlp', identity: path.join(FIX, 'identity'),
      add_sub: 'models/add_sub', mul: 'models/mul', add_sub_mul: path.join(FIX, 'add_sub_mul'),
    });
    // Two python instances: two stubs, whose memory adds up.
    const config = path.join(repo, 'identity', 'config.pbtxt');
    writeFileSync(config, `name: "identity"\nbackend: "python"\nmax_batch_size: 0\ninput [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\ninstance_group [ { kind: KIND_CPU count: 2 } ]\n`);
    server = await startTestServer({
      modelRepositories: [repo], modelControlMode: 'explicit', loadModels: ['mlp', 'identity', 'add_sub_mul'],
    });
  }, 60_000);
  afterAll(() => server?.close());

  const stats = async (model: string): Promise<{ status: number; body: Msg }> => {
    const r = await getJson(`${server.http}/v2/models/${model}/stats`);
    return { status: r.status, body: r.body as Msg };
  };

  it('ONNX: one CPU entry, the growth of the server while its sessions opened', async () => {
    const [s] = (await stats('mlp')).body.model_stats;
    expect(s.memory_usage).toHaveLength(1);
    const [u] = s.memory_usage;
    expect(Object.keys(u).sort()).toEqual(['byte_size', 'id', 'type']);
    expect(u).toMatchObject({ type: 'CPU', id: 0 });
    expect(Number.isInteger(u.byte_size)).toBe(true);
    // Its initializers alone are ~4 MiB.
    expect(u.byte_size).toBeGreaterThan(2 * MiB);
    expect(u.byte_size).toBeLessThan(512 * MiB);
  });

  it("python: one CPU entry, the stubs' resident memory summed over the instances", async () => {
    const [s] = (await stats('identity')).body.model_stats;
    expect(s.memory_usage).toHaveLength(1);
    const [u] = s.memory_usage;
    expect(u).toMatchObject({ type: 'CPU', id: 0 });
    // Each stub is a python interpreter with numpy imported: several MiB resident at least.
    expect(u.byte_size).toBeGreaterThan(2 * 5 * MiB);
    expect(u.byte_size).toBeLessThan(2 * 512 * MiB);
  });

  it('an ensemble loads no instance: no memory usage', async () => {
    const [s] = (await stats('add_sub_mul')).body.model_stats;
    expect(s.memory_usage).toEqual([]);
  });

  it('gRPC ModelStatistics carries the same MemoryUsage messages', async () => {
    const client = inferenceClient(server.grpcPort);
    try {
      const res = await call(client, 'ModelStatistics', { name: 'identity', version: '' });
      const [http] = (await stats('identity')).body.model_stats;
      expect(res.model_stats[0].memory_usage).toEqual(
        http.memory_usage.map((u: Msg) => ({ type: u.type, id: String(u.id), byte_size: String(u.byte_size) })),
      );
    } finally {
      client.close();
    }
  });

  it('a model unloaded shows none; loaded again, it is measured again', async () => {
    expect((await postJson(`${server.http}/v2/repository/models/identity/unload`)).status).toBe(200);
    const all = (await getJson(`${server.http}/v2/models/stats`)).body as Msg;
    expect(all.model_stats.map((s: Msg) => s.name)).not.toContain('identity');
    expect((await stats('identity')).status).toBe(400);
    expect((await postJson(`${server.http}/v2/repository/models/identity/load`)).status).toBe(200);
    const [s] = (await stats('identity')).body.model_stats;
    expect(s.memory_usage[0].byte_size).toBeGreaterThan(2 * 5 * MiB);
  }, 30_000);
});

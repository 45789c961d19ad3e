/**
 * End-to-end: the statistics extension and the Prometheus metrics after real requests to an ONNX
 * model, a python model and an ensemble of python models. Durations are whole nanoseconds (µs in
 * the metrics), each phase is measured where it happens (queue time ends when the instance starts
 * the request, compute phases are non-zero where work happens) and the parts add up.
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { inferenceClient, type Msg } from './helpers/grpc-client';
import { getJson, makeRepository, postJson, ROOT, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;
interface Duration {
  count: number;
  ns: number;
}

const FIX = path.join(ROOT, 'test/fixtures/python');
const PHASES = ['queue', 'compute_input', 'compute_infer', 'compute_output'] as const;

describe('statistics of executed requests', () => {
  let server: Server;
  beforeAll(async () => {
    const repo = makeRepository({
      simple: 'models/simple', add_sub: 'models/add_sub', mul: 'models/mul',
      add_sub_mul: path.join(FIX, 'add_sub_mul'), record_wait: path.join(FIX, 'record_wait'),
    });
    server = await startTestServer({ modelRepositories: [repo] });
    const fp32 = (name: string, data: number[]) => ({ name, datatype: 'FP32', shape: [4], data });
    const int32 = (name: string) => ({ name, datatype: 'INT32', shape: [2, 16], data: Array.from({ length: 32 }, (_, i) => i) });
    const infer = async (model: string, body: unknown) => {
      const r = await postJson(`${server.http}/v2/models/${model}/infer`, body);
      if (r.status !== 200) throw new Error(`${model}: ${r.status} ${JSON.stringify(r.body)}`);
    };
    for (let i = 0; i < 5; i++) {
      await infer('simple', { inputs: [int32('INPUT0'), int32('INPUT1')] });
      await infer('add_sub_mul', { inputs: [fp32('INPUT_A', [3, 4, 5, 6]), fp32('INPUT_B', [1, 2, 3, 4])] });
    }
    // One instance: b arrives while a runs (300 ms) and waits for it.
    const waitMs = (id: string, ms: number) => ({ id, inputs: [{ name: 'WAIT_MS', datatype: 'INT32', shape: [1], data: [ms] }] });
    const a = infer('record_wait', waitMs('a', 300));
    const executed = path.join(repo, 'record_wait', 'executed.txt');
    while (!existsSync(executed)) await new Promise((r) => setTimeout(r, 10));
    await Promise.all([a, infer('record_wait', waitMs('b', 0))]);
  }, 60_000);
  afterAll(() => server?.close());

  const stats = async (model: string): Promise<Msg> => ((await getJson(`${server.http}/v2/models/${model}/stats`)).body as Msg).model_stats[0];

  it.each(['simple', 'record_wait', 'add_sub_mul', 'add_sub'])('%s: integer nanoseconds, phases measured where they happen, sums consistent', async (model) => {
    const s = await stats(model);
    const is = s.inference_stats as Record<string, Duration>;
    const all: Duration[] = [...Object.values(is), ...s.batch_stats.flatMap((b: Msg) => [b.compute_input, b.compute_infer, b.compute_output])];
    for (const d of all) expect(Number.isInteger(d.ns)).toBe(true);
    const success = is.success;
    expect(success.count).toBeGreaterThan(0);
    for (const phase of PHASES) expect(is[phase].count).toBe(success.count);
    for (const phase of PHASES.slice(1)) expect(is[phase].ns).toBeGreaterThan(0);
    expect(is.queue.ns).toBeLessThan(success.ns);
    expect(PHASES.reduce((sum, p) => sum + is[p].ns, 0)).toBeLessThanOrEqual(success.ns);
    // Each execution adds to the statistics of its batch size.
    expect(s.batch_stats.reduce((n: number, b: Msg) => n + b.compute_infer.count, 0)).toBe(s.execution_count);
  });

  it('counts the wait of a request queued behind another as queue time, not compute time', async () => {
    const is = (await stats('record_wait')).inference_stats as Record<string, Duration>;
    expect(is.success.count).toBe(2);
    // b waited for most of a's 300 ms; only a's run is compute.
    expect(is.queue.ns).toBeGreaterThan(150e6);
    expect(is.compute_infer.ns).toBeGreaterThan(290e6);
    expect(is.compute_infer.ns).toBeLessThan(is.success.ns - is.queue.ns);
  });

  it('reports an ensemble as one execution per request with its steps\' compute time', async () => {
    const ensemble = await stats('add_sub_mul');
    const [addSub, mul] = [await stats('add_sub'), await stats('mul')];
    expect(ensemble).toMatchObject({ inference_count: 5, execution_count: 5 });
    const sum = (p: string) => addSub.inference_stats[p].ns + mul.inference_stats[p].ns;
    for (const p of ['compute_input', 'compute_infer', 'compute_output']) expect(ensemble.inference_stats[p].ns).toBe(sum(p));
  });

  it('serves the same integers over gRPC and as whole microseconds in the metrics', async () => {
    const client = inferenceClient(server.grpcPort);
    try {
      const res: Msg = await new Promise((resolve, reject) =>
        client.ModelStatistics({ name: 'simple', version: '' }, (err: Error | null, r: Msg) => (err ? reject(err) : resolve(r))),
      );
      const http = await stats('simple');
      const g = res.model_stats[0].inference_stats;
      for (const p of ['success', ...PHASES]) expect(g[p]).toEqual({ count: String(http.inference_stats[p].count), ns: String(http.inference_stats[p].ns) });
    } finally {
      client.close();
    }
    const metrics = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
    const value = (family: string) => {
      const m = new RegExp(`^${family}\\{model="record_wait",version="1"\\} (\\S+)$`, 'm').exec(metrics);
      return m?.[1] ?? '';
    };
    const is = (await stats('record_wait')).inference_stats;
    expect(value('nv_inference_request_duration_us')).toBe(String(Math.floor(is.success.ns / 1000)));
    expect(value('nv_inference_queue_duration_us')).toBe(String(Math.floor(is.queue.ns / 1000)));
    for (const f of ['compute_input', 'compute_infer', 'compute_output']) {
      expect(value(`nv_inference_${f}_duration_us`)).toMatch(/^\d+$/);
    }
    expect(Number(value('nv_inference_queue_duration_us'))).toBeLessThan(Number(value('nv_inference_request_duration_us')));
  });
});

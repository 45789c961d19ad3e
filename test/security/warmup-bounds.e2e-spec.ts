/**
 * Issue 16: a repository load may carry a `config` parameter (no --allow-model-file-overrides
 * needed), and its `model_warmup` shapes sized allocations unchecked: STRING dims [8000000] took the
 * server from 521 to 1,645 MB and blocked its event loop for 3 s; dims [2^31-1 x3] came back as a
 * raw `Invalid typed array length`. A sample is now sized and checked against the model's inputs
 * before anything is allocated: beyond --http-max-input-size, beyond an exact count, or not what
 * the model takes, the load fails with a clear error, and the server stays up and small.
 */
import { getJson, makeRepository, postJson, startTestServer } from '../helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

let server: Server;

beforeAll(async () => {
  server = await startTestServer({ modelRepositories: [makeRepository({ simple: 'models/simple' })], modelControlMode: 'explicit' });
});

afterAll(async () => {
  await server?.close();
});

const io = (name: string) => ({ name, data_type: 'TYPE_INT32', dims: [16] });

function warmupConfig(input: object): string {
  return JSON.stringify({
    name: 'simple',
    platform: 'onnxruntime_onnx',
    max_batch_size: 8,
    input: [io('INPUT0'), io('INPUT1')],
    output: [io('OUTPUT0'), io('OUTPUT1')],
    model_warmup: [{ name: 'w', batch_size: 1, inputs: { INPUT0: input, INPUT1: { data_type: 'TYPE_INT32', dims: [16], zero_data: true } } }],
  });
}

/** Loads `simple` with `config` over HTTP; the answer, the time it took and how much RSS rose at most meanwhile. */
async function load(config: string): Promise<{ status: number; error: string; ms: number; rssRiseMb: number }> {
  global.gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  const t0 = performance.now();
  const r = await postJson(`${server.http}/v2/repository/models/simple/load`, { parameters: { config } });
  const ms = performance.now() - t0;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  return { status: r.status, error: (r.body as { error?: string })?.error ?? '', ms, rssRiseMb: (peak - before) / 2 ** 20 };
}

it('refuses a warmup sample over --http-max-input-size before allocating it, in a few ms, and stays up', async () => {
  const r = await load(warmupConfig({ data_type: 'TYPE_STRING', dims: [100_000_000], zero_data: true }));
  expect(r.status).toBe(400);
  expect(r.error).toContain(
    "failed to run warmup sample 'w': warmup input 'INPUT0' of model 'simple' with shape [1,100000000] takes a row of the sample to 400000000 bytes, " +
      'more than the maximum allowed input size of 67108864 bytes. Use --http-max-input-size to increase the limit.',
  );
  expect(r.rssRiseMb).toBeLessThan(64);
  expect(r.ms).toBeLessThan(2000);
  expect((await getJson(`${server.http}/v2/health/live`)).status).toBe(200);
});

it('refuses warmup dims whose element count overflows as a config error, not a raw RangeError', async () => {
  const r = await load(warmupConfig({ data_type: 'TYPE_INT32', dims: [2147483647, 2147483647, 2147483647], zero_data: true }));
  expect(r.status).toBe(400);
  expect(r.error).toContain("model warmup setting 'w' for simple: input 'INPUT0' has dims [2147483647,2147483647,2147483647] with more than");
  expect(r.error).not.toContain('Invalid typed array length');
});

it("the audit's STRING dims [8000000] for an INT32 input: refused as Triton refuses the request, before its data is made", async () => {
  const r = await load(warmupConfig({ data_type: 'TYPE_STRING', dims: [8_000_000], zero_data: true }));
  expect(r.status).toBe(400);
  expect(r.error).toContain(
    "failed to run warmup sample 'w': [request id: <id_unknown>] inference input 'INPUT0' data-type is 'BYTES', but model 'simple' expects 'INT32'",
  );
  // It took RSS from 521 to 1,645 MB and 3 s before (8 M empty Uint8Arrays made, then sent).
  expect(r.rssRiseMb).toBeLessThan(64);
  expect(r.ms).toBeLessThan(2000);
});

it('still loads and serves the model from the repository afterwards', async () => {
  expect((await postJson(`${server.http}/v2/repository/models/simple/load`, {})).status).toBe(200);
  const input = (name: string) => ({ name, datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) });
  const r = await postJson(`${server.http}/v2/models/simple/infer`, { inputs: [input('INPUT0'), input('INPUT1')] });
  expect(r.status).toBe(200);
});

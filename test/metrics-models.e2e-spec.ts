/**
 * End-to-end: what a model's config and its requests make of the metrics port. A model's
 * `model_metrics` sets its own histogram buckets (and no other model's; Triton's first-response
 * histogram exists for decoupled models only), `--metrics-config`'s
 * latency and batch-size buckets reach the exposition, `metric_tags` label every per-model family,
 * failures count with Triton's reasons (REJECTED: queue timeout, CANCELED: client gone, OTHER:
 * every ensemble failure, while the composing model keeps BACKEND), the queue depth shows the
 * requests waiting, and the sequence slots in use follow a sequence's start and end.
 */
import * as http from 'node:http';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse, sample, type Line } from './helpers/exposition';
import { inferenceClient, openInferStream } from './helpers/grpc-client';
import { until } from './helpers/poll';
import { executedIds, RECORD_WAIT, recordWaitVariant } from './helpers/record-wait';
import { getJson, makeRepository, MODELS, postJson, ROOT, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const FIX = path.join(ROOT, 'test/fixtures/python');

/** models/simple as model `name` of `repo`, `extra` appended to its config. */
function simpleVariant(repo: string, name: string, extra: string): void {
  cpSync(path.join(MODELS, 'simple'), path.join(repo, name), { recursive: true });
  const config = readFileSync(path.join(MODELS, 'simple/config.pbtxt'), 'utf8').replace('name: "simple"', `name: "${name}"`);
  writeFileSync(path.join(repo, name, 'config.pbtxt'), `${config}\n${extra}\n`);
}

const BUCKETS = (family: string, buckets: number[]) =>
  `{ metric_identifier { family: "${family}" } histogram_options { buckets: [ ${buckets.join(', ')} ] } }`;

describe('per-model metrics', () => {
  let server: Server;
  let repo: string;
  const lines = async (): Promise<Line[]> => parse(await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text());
  const infer = (model: string, body: unknown) => postJson(`${server.http}/v2/models/${model}/infer`, body);
  const int32 = (name: string) => ({ name, datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) });
  const simpleBody = { inputs: [int32('INPUT0'), int32('INPUT1')] };
  const stats = async (model: string) => ((await getJson(`${server.http}/v2/models/${model}/stats`)).body as { model_stats: any[] }).model_stats[0];
  const les = (ls: Line[], family: string, model: string) => ls.filter((l) => l.name === `${family}_bucket` && l.labels.model === model).map((l) => l.labels.le);
  const failures = async (model: string) => {
    const ls = await lines();
    return Object.fromEntries(['REJECTED', 'CANCELED', 'BACKEND', 'OTHER'].map((reason) => [reason, sample(ls, 'nv_inference_request_failure', { model, version: '1', reason })]));
  };

  beforeAll(async () => {
    repo = makeRepository({
      simple: 'models/simple',
      accumulator: 'models/accumulator',
      record_wait: RECORD_WAIT,
      execute_raises: path.join(FIX, 'execute_raises'),
      ensemble_raises: path.join(FIX, 'ensemble_raises'),
      ensemble_wait: path.join(FIX, 'ensemble_wait'),
      trace_context: path.join(FIX, 'trace_context'),
      ensemble_trace_context: path.join(FIX, 'ensemble_trace_context'),
    });
    // An ensemble whose one step is the ensemble ensemble_raises.
    mkdirSync(path.join(repo, 'outer_raises/1'), { recursive: true });
    writeFileSync(
      path.join(repo, 'outer_raises/config.pbtxt'),
      readFileSync(path.join(FIX, 'ensemble_raises/config.pbtxt'), 'utf8')
        .replace('name: "ensemble_raises"', 'name: "outer_raises"')
        .replace(/step \[[\s\S]*\]\s*\}\s*$/, 'step [ { model_name: "ensemble_raises" input_map { key: "IN" value: "IN" } output_map { key: "OUT" value: "OUT" } } ] }\n'),
    );
    simpleVariant(
      repo,
      'simple_tuned',
      [
        'metric_tags { key: "team" value: "ml" }',
        'model_metrics { metric_control [',
        `  ${BUCKETS('nv_inference_first_response_histogram_ms', [1, 2.5, 10])},`,
        `  ${BUCKETS('nereid_inference_request_duration_ms', [1, 2.5, 10])},`,
        // Not a histogram: ignored with Triton's warning, the model loads.
        `  ${BUCKETS('nv_inference_count', [1])}`,
        '] }',
      ].join('\n'),
    );
    // Two versions that load together, version 2 two seconds slower (a scrape comes between).
    const identity = readFileSync(path.join(FIX, 'identity/1/model.py'), 'utf8');
    mkdirSync(path.join(repo, 'two_versions/1'), { recursive: true });
    mkdirSync(path.join(repo, 'two_versions/2'), { recursive: true });
    writeFileSync(
      path.join(repo, 'two_versions/config.pbtxt'),
      readFileSync(path.join(FIX, 'identity/config.pbtxt'), 'utf8').replace('name: "identity"', 'name: "two_versions"') + 'version_policy: { all {} }\n',
    );
    writeFileSync(path.join(repo, 'two_versions/1/model.py'), identity);
    writeFileSync(
      path.join(repo, 'two_versions/2/model.py'),
      identity.replace('class TritonPythonModel:', 'class TritonPythonModel:\n    def initialize(self, args):\n        import time\n        time.sleep(2)\n'),
    );
    // A decoupled model with its own first-response buckets and a tag (only decoupled models have that histogram).
    mkdirSync(path.join(repo, 'repeat_tuned/1'), { recursive: true });
    cpSync(path.join(FIX, 'decoupled_repeat/1/model.py'), path.join(repo, 'repeat_tuned/1/model.py'));
    writeFileSync(
      path.join(repo, 'repeat_tuned/config.pbtxt'),
      readFileSync(path.join(FIX, 'decoupled_repeat/config.pbtxt'), 'utf8').replace('name: "decoupled_repeat"', 'name: "repeat_tuned"') +
        `\nmetric_tags { key: "team" value: "ml" }\nmodel_metrics { metric_control [ ${BUCKETS('nv_inference_first_response_histogram_ms', [1, 2.5, 10])} ] }\n`,
    );
    simpleVariant(repo, 'simple_bad_buckets', `model_metrics { metric_control [ ${BUCKETS('nereid_inference_batch_size', [4, 2])} ] }`);
    // A 500 ms queue timeout that rejects, one instance, one request per execution.
    recordWaitVariant(repo, 'reject_wait', 1, 'dynamic_batching { default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 500000 } }');
    server = await startTestServer({
      modelRepositories: [repo],
      modelControlMode: 'explicit',
      loadModels: ['simple', 'simple_tuned', 'repeat_tuned', 'accumulator', 'record_wait', 'reject_wait', 'execute_raises', 'ensemble_raises', 'outer_raises', 'ensemble_wait', 'trace_context', 'ensemble_trace_context'],
      metricsConfig: ['histogram_latencies=true', 'summary_latencies=true', 'latency_buckets_ms=0.5,50', 'batch_size_buckets=1,4'],
    });
    for (const model of ['simple', 'simple_tuned']) for (let i = 0; i < 3; i++) expect((await infer(model, simpleBody)).status).toBe(200);
    // Three requests of two responses each (then a bare final flag) to the decoupled model, over a gRPC stream.
    const client = inferenceClient(server.grpcPort);
    try {
      const { stream, messages, done } = openInferStream(client);
      for (let i = 0; i < 3; i++) {
        stream.write({ model_name: 'repeat_tuned', inputs: [{ name: 'IN', datatype: 'INT32', shape: [2] }], raw_input_contents: [Buffer.from(new Int32Array([i, i]).buffer)] });
      }
      stream.end();
      await done;
      expect(messages.filter((m) => m.error_message === '')).toHaveLength(6);
    } finally {
      client.close();
    }
  }, 90_000);
  afterAll(() => server?.close());

  it("gives a model the histogram buckets of its model_metrics, and no other model", async () => {
    const ls = await lines();
    expect(les(ls, 'nv_inference_first_response_histogram_ms', 'repeat_tuned')).toEqual(['1', '2.5', '10', '+Inf']);
    expect(sample(ls, 'nv_inference_first_response_histogram_ms_bucket', { model: 'repeat_tuned', le: '+Inf' })).toBe(3);
    // Not decoupled: no first-response histogram at all, its model_metrics entry for it notwithstanding (as Triton).
    expect(les(ls, 'nv_inference_first_response_histogram_ms', 'simple_tuned')).toEqual([]);
    expect(les(ls, 'nv_inference_first_response_histogram_ms', 'simple')).toEqual([]);
    expect(les(ls, 'nereid_inference_request_duration_ms', 'simple_tuned')).toEqual(['1', '2.5', '10', '+Inf']);
    // What model_metrics left alone keeps --metrics-config's buckets.
    expect(les(ls, 'nereid_inference_queue_duration_ms', 'simple_tuned')).toEqual(['0.5', '50', '+Inf']);
    for (const family of ['nereid_inference_request_duration_ms', 'nereid_inference_queue_duration_ms', 'nereid_inference_compute_duration_ms']) {
      expect(les(ls, family, 'simple')).toEqual(['0.5', '50', '+Inf']);
    }
    for (const model of ['simple', 'simple_tuned']) {
      expect(les(ls, 'nereid_inference_batch_size', model)).toEqual(['1', '4', '+Inf']);
      expect(sample(ls, 'nereid_inference_request_duration_ms_count', { model })).toBe(3);
    }
  });

  it('keeps the histograms of a version scraped while it loaded', async () => {
    let loaded = false;
    const load = postJson(`${server.http}/v2/repository/models/two_versions/load`, {}).finally(() => (loaded = true));
    let scrapes = 0;
    while (!loaded) {
      await lines();
      scrapes++;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect((await load).status).toBe(200);
    expect(scrapes).toBeGreaterThan(5);
    const body = { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2], data: [1, 2] }] };
    for (const version of ['1', '2']) {
      expect((await postJson(`${server.http}/v2/models/two_versions/versions/${version}/infer`, body)).status).toBe(200);
      expect(sample(await lines(), 'nereid_inference_request_duration_ms_count', { model: 'two_versions', version })).toBe(1);
    }
  }, 60_000);

  it('refuses to load a model whose model_metrics buckets are out of order', async () => {
    const r = await postJson(`${server.http}/v2/repository/models/simple_bad_buckets/load`, {});
    expect(r.status).not.toBe(200);
    expect(r.body.error).toContain("the buckets of 'nereid_inference_batch_size' must be finite numbers in strictly increasing order, got [4, 2]");
  });

  it("labels every per-model family with the model's metric_tags", async () => {
    const ls = (await lines()).filter((l) => l.labels.model === 'simple_tuned');
    const families = new Set(ls.map((l) => l.name));
    for (const f of ['nv_inference_request_success', 'nereid_inference_batch_size_count', 'nv_inference_queue_summary_us']) {
      expect(families).toContain(f);
    }
    expect(ls.filter((l) => l.labels._team !== 'ml')).toEqual([]);
    const first = (await lines()).filter((l) => l.name === 'nv_inference_first_response_histogram_ms_bucket' && l.labels.model === 'repeat_tuned');
    expect(first).toHaveLength(4);
    expect(first.filter((l) => l.labels._team !== 'ml')).toEqual([]);
  });

  it('counts a queue timeout as REJECTED and shows the waiting requests in the queue depth', async () => {
    const body = (waitMs: number) => ({ inputs: [{ name: 'WAIT_MS', datatype: 'INT32', shape: [1, 1], data: [waitMs] }] });
    const busy = infer('reject_wait', { id: 'busy', ...body(2000) });
    await until('the busy request to run', () => executedIds(repo, 'reject_wait').includes('busy'));
    const waiting = [1, 2, 3].map(() => infer('reject_wait', body(0)));
    // The busy request and the three waiting (queued, or handed ahead to the instance), until the timeout.
    await until('the requests to wait', async () => sample(await lines(), 'nereid_inference_queue_depth', { model: 'reject_wait' }) === 4, 2_000);
    const statuses = (await Promise.all(waiting)).map((r) => r.status);
    expect((await busy).status).toBe(200);
    const rejected = statuses.filter((s) => s === 503).length;
    expect(rejected).toBeGreaterThanOrEqual(1);
    expect(await failures('reject_wait')).toEqual({ REJECTED: rejected, CANCELED: 0, BACKEND: 0, OTHER: 0 });
    expect((await stats('reject_wait')).inference_stats.fail.count).toBe(rejected);
    expect(sample(await lines(), 'nereid_inference_queue_depth', { model: 'reject_wait' })).toBe(0);
  }, 30_000);

  it('counts requests whose client went away as CANCELED', async () => {
    const send = (id: string, waitMs: number) => {
      const payload = JSON.stringify({ id, inputs: [{ name: 'WAIT_MS', datatype: 'INT32', shape: [1], data: [waitMs] }] });
      const req = http.request(`${server.http}/v2/models/record_wait/infer`, { method: 'POST', headers: { 'content-type': 'application/json' } });
      const answer = new Promise<number>((resolve) => {
        req.on('response', (res) => res.resume().on('end', () => resolve(res.statusCode ?? 0)));
        req.on('error', () => resolve(-1));
      });
      req.end(payload);
      return { answer, leave: () => req.destroy() };
    };
    const busy = send('busy', 1000);
    await until('the busy request to run', () => executedIds(repo, 'record_wait').includes('busy'));
    const gone = [send('a', 0), send('b', 0)];
    await until('both to wait', async () => sample(await lines(), 'nereid_inference_queue_depth', { model: 'record_wait' }) === 3);
    for (const g of gone) g.leave();
    expect(await busy.answer).toBe(200);
    await until('the cancellations to be counted', async () => (await failures('record_wait')).CANCELED === 2);
    expect(await failures('record_wait')).toEqual({ REJECTED: 0, CANCELED: 2, BACKEND: 0, OTHER: 0 });
  }, 30_000);

  it('counts an ensemble failure as OTHER, and its composing model failure as BACKEND', async () => {
    const r = await infer('ensemble_raises', { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1], data: [-1] }] });
    expect(r.status).not.toBe(200);
    expect(await failures('ensemble_raises')).toEqual({ REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 1 });
    expect(await failures('execute_raises')).toEqual({ REJECTED: 0, CANCELED: 0, BACKEND: 1, OTHER: 0 });
  }, 30_000);

  it('counts OTHER in each ensemble of a nested ensemble, and in an ensemble whose client went away', async () => {
    const [outer, inner, step] = [await failures('outer_raises'), await failures('ensemble_raises'), await failures('execute_raises')];
    const r = await infer('outer_raises', { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1], data: [-1] }] });
    expect(r.status).not.toBe(200);
    expect(await failures('outer_raises')).toEqual({ ...outer, OTHER: outer.OTHER + 1 });
    expect(await failures('ensemble_raises')).toEqual({ ...inner, OTHER: inner.OTHER + 1 });
    expect(await failures('execute_raises')).toEqual({ ...step, BACKEND: step.BACKEND + 1 });

    // record_wait busy for 1 s; the ensemble's step waits in its queue when the client leaves.
    const [ensemble, waited] = [await failures('ensemble_wait'), await failures('record_wait')];
    const busy = infer('record_wait', { id: 'busy-2', inputs: [{ name: 'WAIT_MS', datatype: 'INT32', shape: [1], data: [1000] }] });
    await until('the busy request to run', () => executedIds(repo, 'record_wait').includes('busy-2'));
    const req = http.request(`${server.http}/v2/models/ensemble_wait/infer`, { method: 'POST', headers: { 'content-type': 'application/json' } });
    req.on('error', () => undefined);
    req.end(JSON.stringify({ inputs: [{ name: 'WAIT_MS', datatype: 'INT32', shape: [1], data: [0] }] }));
    await until('the step to wait', async () => sample(await lines(), 'nereid_inference_queue_depth', { model: 'record_wait' }) === 2);
    req.destroy();
    expect((await busy).status).toBe(200);
    await until('the cancellation to be counted', async () => (await failures('ensemble_wait')).OTHER === ensemble.OTHER + 1);
    expect(await failures('ensemble_wait')).toEqual({ ...ensemble, OTHER: ensemble.OTHER + 1 });
    expect(await failures('record_wait')).toEqual({ ...waited, CANCELED: waited.CANCELED + 1 });
  }, 30_000);

  it("counts OTHER in an ensemble whose response cannot be shaped (classification of a BOOL output)", async () => {
    const [ensemble, step] = [await failures('ensemble_trace_context'), await failures('trace_context')];
    const r = await infer('ensemble_trace_context', {
      inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: [1] }],
      outputs: [{ name: 'HAS_CONTEXT', parameters: { classification: 1 } }],
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("class result not available for output due to unsupported type 'BOOL'");
    expect(await failures('ensemble_trace_context')).toEqual({ ...ensemble, OTHER: ensemble.OTHER + 1 });
    // The step answered: its model counts no failure.
    expect(await failures('trace_context')).toEqual(step);
  }, 30_000);

  it('shows the sequence slots in use after a sequence starts, and 0 once it ends', async () => {
    const step = (start: boolean, end: boolean) =>
      infer('accumulator', { parameters: { sequence_id: 42, sequence_start: start, sequence_end: end }, inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: [5] }] });
    const slots = async () => sample(await lines(), 'nereid_sequence_slots_in_use', { model: 'accumulator' });
    expect(await slots()).toBe(0);
    expect((await step(true, false)).status).toBe(200);
    expect(await slots()).toBe(1);
    expect((await step(false, true)).status).toBe(200);
    expect(await slots()).toBe(0);
  });
});

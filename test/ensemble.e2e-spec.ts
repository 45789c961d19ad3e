/**
 * End-to-end: ensembles through the ensemble scheduler against a real server and real python
 * models. Each step goes through its own model's scheduler, so concurrent ensemble requests batch
 * in a composing model with dynamic batching; a non-batching ensemble feeds a batching model with
 * a batch dimension of 1 added (and removed from the answer); the ensemble's own statistics count
 * its requests while the composing model's count the steps.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { inferenceClient, type Msg } from './helpers/grpc-client';
import { executedIds, recordWaitVariant } from './helpers/record-wait';
import { getJson, makeRepository, postJson, ROOT, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const FIX = path.join(ROOT, 'test/fixtures/python');
const outputOf = (body: Msg, name: string) => (body.outputs as Msg[]).find((o) => o.name === name);

describe('ensembles as a scheduler', () => {
  let server: Server;
  let repo = '';
  /** The request ids a record_wait model has executed, in order. */
  const executed = (model: string): string[] => executedIds(repo, model);
  beforeAll(async () => {
    repo = makeRepository({
      slow_scale: path.join(FIX, 'slow_scale'),
      ensemble_batched: path.join(FIX, 'ensemble_batched'),
      ensemble_flat: path.join(FIX, 'ensemble_flat'),
      execute_raises: path.join(FIX, 'execute_raises'), ensemble_raises: path.join(FIX, 'ensemble_raises'),
      sequence_sum_str: path.join(FIX, 'sequence_sum_str'), ensemble_sequence: path.join(FIX, 'ensemble_sequence'),
      decoupled_repeat: path.join(FIX, 'decoupled_repeat'), identity_types: path.join(FIX, 'identity_types'),
      ensemble_repeat: path.join(FIX, 'ensemble_repeat'),
      record_wait: path.join(FIX, 'record_wait'), ensemble_wait: path.join(FIX, 'ensemble_wait'),
    });
    // record_wait behind a dynamic batcher whose queue policy lets a request shorten the 10 s timeout,
    // and a non-batching ensemble in front of it.
    recordWaitVariant(repo, 'wait_batched', 8,
      'dynamic_batching { default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 10000000 allow_timeout_override: true } }');
    mkdirSync(path.join(repo, 'ensemble_timeout', '1'), { recursive: true });
    writeFileSync(
      path.join(repo, 'ensemble_timeout', 'config.pbtxt'),
      readFileSync(path.join(FIX, 'ensemble_wait', 'config.pbtxt'), 'utf8').replace(/ensemble_wait/g, 'ensemble_timeout').replace('"record_wait"', '"wait_batched"'),
    );
    server = await startTestServer({ modelRepositories: [repo] });
  }, 120_000);
  afterAll(() => server?.close());

  const infer = (model: string, body: unknown) => postJson(`${server.http}/v2/models/${model}/infer`, body);
  const stats = async (model: string): Promise<Msg> => ((await getJson(`${server.http}/v2/models/${model}/stats`)).body as Msg).model_stats[0];
  const batchSizes = (s: Msg): number[] => (s.batch_stats as Msg[]).map((b) => b.batch_size);

  it('batches the steps of concurrent ensemble requests in the composing model', async () => {
    const before = await stats('slow_scale');
    // slow_scale takes 100 ms per execution with one instance: requests sent while it runs wait
    // for it together, and the dynamic batcher runs them as one batch.
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        infer('ensemble_batched', { id: `b${i}`, inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 4], data: [i, i, i, i] }] }),
      ),
    );
    results.forEach((r, i) => {
      expect(r.status).toBe(200);
      expect(r.body.id).toBe(`b${i}`);
      expect(outputOf(r.body, 'Y')).toMatchObject({ shape: [1, 4], data: [2 * i, 2 * i, 2 * i, 2 * i] });
    });
    const after = await stats('slow_scale');
    expect(after.inference_count - before.inference_count).toBe(16);
    // 16 step requests in fewer executions, in batches larger than one.
    expect(after.execution_count - before.execution_count).toBeLessThan(16);
    expect(Math.max(...batchSizes(after))).toBeGreaterThan(1);
    const ensemble = await stats('ensemble_batched');
    expect(ensemble).toMatchObject({ inference_count: 16, execution_count: 16 });
    expect(ensemble.inference_stats.success.count).toBe(16);
  }, 60_000);

  it('adds the batch dimension of 1 where a non-batching ensemble feeds a batching model, and removes it', async () => {
    const r = await infer('ensemble_flat', { inputs: [{ name: 'IN', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] }] });
    expect(r.status).toBe(200);
    expect(outputOf(r.body, 'OUT')).toMatchObject({ name: 'OUT', datatype: 'FP32', shape: [4], data: [2, 4, 6, 8] });
    // Concurrent requests of the non-batching ensemble batch in the composing model too.
    const before = await stats('slow_scale');
    const many = await Promise.all(
      Array.from({ length: 12 }, (_, i) => infer('ensemble_flat', { inputs: [{ name: 'IN', datatype: 'FP32', shape: [4], data: [i, 0, 0, 0] }] })),
    );
    many.forEach((m, i) => expect(outputOf(m.body, 'OUT')).toMatchObject({ shape: [4], data: [2 * i, 0, 0, 0] }));
    const after = await stats('slow_scale');
    expect(after.execution_count - before.execution_count).toBeLessThan(12);
  }, 60_000);

  it('keeps the ensemble\'s shape checks: a request shaped for the batching model is refused by the ensemble', async () => {
    const r = await infer('ensemble_flat', { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }] });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("unexpected shape for input 'IN' for model 'ensemble_flat'");
  });

  it('fails the ensemble request once with the failing step\'s error, and runs no step after it', async () => {
    const ok = await infer('ensemble_raises', { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1], data: [3] }] });
    expect(ok.status).toBe(200);
    expect(outputOf(ok.body, 'OUT')?.data).toEqual([3]);
    const failed = await infer('ensemble_raises', { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1], data: [-1] }] });
    expect(failed.status).toBe(500);
    expect(failed.body.error).toContain('ValueError: execute exploded on -1');
    const step = await stats('execute_raises');
    // Two steps of the good request, one of the failed one.
    expect(step.inference_stats.success.count).toBe(2);
    expect(step.inference_stats.fail.count).toBe(1);
    const ensemble = await stats('ensemble_raises');
    expect(ensemble.inference_stats.success.count).toBe(1);
    expect(ensemble.inference_stats.fail.count).toBe(1);
    expect(ensemble.execution_count).toBe(1);
  });


  it('passes the ensemble request\'s correlation id and flags to a sequence model step', async () => {
    const step = (id: string, value: number, flags: { start?: boolean; end?: boolean } = {}) =>
      infer('ensemble_sequence', {
        parameters: { sequence_id: id, ...(flags.start ? { sequence_start: true } : {}), ...(flags.end ? { sequence_end: true } : {}) },
        inputs: [{ name: 'VALUE', datatype: 'INT32', shape: [1], data: [value] }],
      });
    const totals: Record<string, number[]> = { a: [], b: [] };
    const run = async (id: string, values: number[]) => {
      for (let i = 0; i < values.length; i++) {
        const r = await step(id, values[i], { start: i === 0, end: i === values.length - 1 });
        expect(r.status).toBe(200);
        expect(outputOf(r.body, 'TOTAL')).toMatchObject({ shape: [1] });
        totals[id].push(outputOf(r.body, 'TOTAL')?.data[0]);
      }
    };
    // Two sequences interleaved: each keeps its own running sum in the model, keyed by its id.
    await Promise.all([run('a', [1, 2, 3, 4]), run('b', [10, 20, 30])]);
    expect(totals).toEqual({ a: [1, 3, 6, 10], b: [10, 30, 60] });
    // The sequence model's own rule reaches the client through the ensemble: no START for an unknown id.
    const orphan = await step('never-started', 5);
    expect(orphan.status).toBe(400);
    expect(orphan.body.error).toContain(
      "inference request for sequence never-started to model 'sequence_sum_str' must specify the START flag on the first request of the sequence",
    );
  });


  it('lets every response of a decoupled step flow on through the next step, streamed over gRPC', async () => {
    const client = inferenceClient(server.grpcPort);
    const answers: { value: number; index: number; shapes: string[][] }[] = [];
    try {
      await new Promise<void>((resolve, reject) => {
        const stream = client.ModelStreamInfer();
        stream.on('data', (m: Msg) => {
          if (m.error_message) return reject(new Error(m.error_message));
          const res = m.infer_response;
          const raw: Buffer[] = res.raw_output_contents ?? [];
          if (raw.length === 2) {
            answers.push({ value: raw[0].readInt32LE(0), index: raw[1].readUInt32LE(0), shapes: (res.outputs as Msg[]).map((o) => o.shape) });
          }
          if (answers.length === 3) stream.end();
        });
        stream.on('end', resolve);
        stream.on('error', reject);
        const data = Buffer.alloc(12);
        [7, 8, 9].forEach((v, i) => data.writeInt32LE(v, i * 4));
        stream.write({ model_name: 'ensemble_repeat', id: 'e1', inputs: [{ name: 'IN', datatype: 'INT32', shape: [3] }], raw_input_contents: [data] });
      });
    } finally {
      client.close();
    }
    // Each value of the decoupled step went through identity_types (a batch of one there, none here).
    expect(answers).toEqual([
      { value: 7, index: 0, shapes: [['1'], ['1']] },
      { value: 8, index: 1, shapes: [['1'], ['1']] },
      { value: 9, index: 2, shapes: [['1'], ['1']] },
    ]);
    expect((await stats('identity_types')).inference_stats.success.count).toBe(3);
  });


  it('cancels the queued step of an ensemble request whose client went away: the step never runs', async () => {
    const waitFor = async (what: () => boolean | Promise<boolean>) => {
      const start = Date.now();
      while (!(await what())) {
        if (Date.now() - start > 15_000) throw new Error('timed out');
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    // record_wait's one instance runs 'busy' for 1.5 s; the ensemble's step for 'gone' queues behind it.
    const busy = infer('record_wait', { id: 'busy', inputs: [{ name: 'WAIT_MS', datatype: 'INT32', shape: [1], data: [1500] }] });
    await waitFor(() => executed('record_wait').includes('busy'));
    const body = JSON.stringify({ id: 'gone', inputs: [{ name: 'WAIT_MS', datatype: 'INT32', shape: [1], data: [0] }] });
    const req = http.request(`${server.http}/v2/models/ensemble_wait/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('error', () => undefined);
    req.end(body);
    await new Promise((r) => setTimeout(r, 300));
    req.destroy();
    expect((await busy).status).toBe(200);
    const failures = async () => (await stats('record_wait')).inference_stats.fail.count as number;
    await waitFor(async () => (await failures()) === 1);
    expect(executed('record_wait')).toEqual(['busy']);
    const ensemble = (await stats('ensemble_wait')).inference_stats;
    expect(ensemble.fail.count).toBe(1);
    expect(ensemble.success.count).toBe(0);
  }, 30_000);


  it('gives the ensemble request\'s timeout to its step: it expires in the step model\'s queue', async () => {
    let busyDone = Infinity;
    const busy = infer('wait_batched', { id: 'busy', inputs: [{ name: 'WAIT_MS', datatype: 'INT32', shape: [1, 1], data: [2000] }] }).then(
      (r) => ((busyDone = Date.now()), r),
    );
    const start = Date.now();
    while (!executed('wait_batched').includes('busy')) {
      if (Date.now() - start > 15_000) throw new Error('timed out waiting for the busy request to run');
      await new Promise((r) => setTimeout(r, 20));
    }
    const late = await infer('ensemble_timeout', {
      id: 'late',
      parameters: { timeout: 300_000 },
      inputs: [{ name: 'WAIT_MS', datatype: 'INT32', shape: [1], data: [0] }],
    });
    const lateAt = Date.now();
    expect(late).toMatchObject({ status: 503, body: { error: 'Request timeout expired' } });
    expect((await busy).status).toBe(200);
    expect(lateAt).toBeLessThan(busyDone);
    expect(executed('wait_batched')).toEqual(['busy']);
  }, 30_000);

});

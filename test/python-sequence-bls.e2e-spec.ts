/**
 * End-to-end: a python model passes its request's correlation id and sequence flags on through
 * BLS (`pb_utils.InferenceRequest(..., correlation_id=request.correlation_id(),
 * flags=request.flags())`), so the sequence lives in the ONNX accumulator it calls: two
 * interleaved sequences (a numeric and a string id) give their own running sums, and a request
 * after END without START comes back with the sequence batcher's words.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { makeRepository, postJson, ROOT, startTestServer } from './helpers/server';

describe('python BLS into a sequence model', () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;

  beforeAll(async () => {
    const repo = makeRepository({
      bls_sequence: path.join(ROOT, 'test/fixtures/python/bls_sequence'),
      accumulator_short_idle: path.join(ROOT, 'test/fixtures/onnx/accumulator_short_idle'),
    });
    // The fixture's 300 ms idle limit is for idle tests; a slow machine must not expire these sequences.
    const config = path.join(repo, 'accumulator_short_idle', 'config.pbtxt');
    writeFileSync(config, readFileSync(config, 'utf8').replace(/max_sequence_idle_microseconds: \d+/, 'max_sequence_idle_microseconds: 60000000'));
    server = await startTestServer({ modelRepositories: [repo] });
  }, 120_000);
  afterAll(() => server?.close());

  const step = (value: number, parameters: Record<string, unknown>) =>
    postJson(`${server.http}/v2/models/bls_sequence/infer`, {
      inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1], data: [value] }],
      parameters,
    });
  const sum = async (value: number, parameters: Record<string, unknown>): Promise<number> => {
    const r = await step(value, parameters);
    expect(r.status).toBe(200);
    return r.body.outputs[0].data[0] as number;
  };

  it('keeps each sequence of the callee apart by the id the caller passed', async () => {
    expect(await sum(3, { sequence_id: 11, sequence_start: true })).toBe(3);
    expect(await sum(100, { sequence_id: 'eleven', sequence_start: true })).toBe(100);
    expect(await sum(4, { sequence_id: 11 })).toBe(7);
    expect(await sum(1, { sequence_id: 'eleven', sequence_end: true })).toBe(101);
    expect(await sum(5, { sequence_id: 11, sequence_end: true })).toBe(12);
    // Ended: the callee wants START again, and the caller passes its error on.
    const after = await step(1, { sequence_id: 11 });
    expect(after.status).toBe(400);
    expect(after.body.error).toBe(
      "inference request for sequence 11 to model 'accumulator_short_idle' must specify the START flag on the first request of the sequence",
    );
  });
});

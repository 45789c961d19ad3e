/**
 * End-to-end: stateful models behind the sequence batcher, driven as Triton's clients drive them
 * (INPUT only, with the request parameters sequence_id / sequence_start / sequence_end), over HTTP,
 * gRPC ModelInfer and gRPC ModelStreamInfer streams, with real onnxruntime and real python:
 * - 64 interleaved sequences of random length (seeded) against the direct-strategy ONNX
 *   `accumulator` (running sum in an implicit state tensor, 8 slots: most sequences wait in the
 *   backlog) and the oldest-strategy python `sequence_sum_py` (running sum per correlation id; with
 *   two instances too, each keeping its own sums, so a sequence must stay on its instance)
 *   give exactly the running sums computed here; the state tensor never reaches the client, and
 *   only real requests count as inferences (empty direct slots are padding);
 * - STRING correlation ids (a TYPE_STRING CORRID model, and a model without CORRID), a uint64 id
 *   beyond 2^53;
 * - Triton's documentation models simple_sequence and simple_dyna_sequence give what Triton's
 *   example clients (simple_grpc_sequence_stream_infer_client.py, simple_http_sequence_sync_infer_client.py)
 *   check for.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { closeWithGrpcClient, startWithGrpcClient, type Client, type Msg } from './helpers/grpc-client';
import {
  grpcStep, httpStep, planSequences, runningSums, SequenceStream, stepsOf,
  type Outcome, type PlannedSequence, type SequenceId, type Step,
} from './helpers/sequence-client';
import { getJson, makeRepository, ROOT, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const ONNX = path.join(ROOT, 'test/fixtures/onnx');
const PY = path.join(ROOT, 'test/fixtures/python');

let server: Server;
let client: Client;

beforeAll(async () => {
  const repo = makeRepository({
    accumulator: 'models/accumulator',
    sequence_sum_py: 'models/sequence_sum_py',
    sequence_sum_str: path.join(PY, 'sequence_sum_str'),
    simple_sequence: path.join(ONNX, 'simple_sequence'),
    simple_dyna_sequence: path.join(ONNX, 'simple_dyna_sequence'),
  });
  // Two python instances, each with its own sums: a sequence's requests must all reach the same one.
  // 16 candidate sequences per instance: 64 sequences fill both (and the backlog).
  cpSync(path.join(ROOT, 'models/sequence_sum_py/1'), path.join(repo, 'sequence_sum_py2/1'), { recursive: true });
  writeFileSync(
    path.join(repo, 'sequence_sum_py2/config.pbtxt'),
    readFileSync(path.join(ROOT, 'models/sequence_sum_py/config.pbtxt'), 'utf8')
      .replace('name: "sequence_sum_py"', 'name: "sequence_sum_py2"')
      .replace('count: 1', 'count: 2')
      .replace('max_candidate_sequences: 64', 'max_candidate_sequences: 16'),
  );
  ({ server, client } = await startWithGrpcClient(repo));
}, 60_000);

afterAll(() => closeWithGrpcClient({ server, client }));

type Transport = 'http' | 'grpc' | 'stream';

function answerOf(o: Outcome, what: string): { value: number; outputs: string[] } {
  if (!o.ok) throw new Error(`${what}: ${o.status} ${o.message}`);
  return o.answer;
}

/**
 * Runs the sequences concurrently. HTTP and gRPC ModelInfer: each sequence sends its next request
 * when the previous one is answered. Stream: every request of every sequence is written up front,
 * round-robin across the sequences (as Triton's stream client sends them, without waiting).
 * Returns each sequence's answers in order, and the output names of every response.
 */
async function drive(transport: Transport, model: string, seqs: PlannedSequence[]): Promise<{ values: number[][]; outputNames: Set<string> }> {
  const outputNames = new Set<string>();
  const record = (o: Outcome, what: string): number => {
    const a = answerOf(o, what);
    a.outputs.forEach((n) => outputNames.add(n));
    return a.value;
  };
  if (transport === 'stream') {
    const stream = new SequenceStream(client);
    const pending: Promise<Outcome>[][] = seqs.map(() => []);
    const steps = seqs.map((s) => stepsOf(model, s));
    const longest = Math.max(...steps.map((s) => s.length));
    for (let i = 0; i < longest; i++) {
      steps.forEach((s, k) => {
        if (i < s.length) pending[k].push(stream.send(s[i]));
      });
    }
    const values = await Promise.all(
      pending.map(async (p, k) => (await Promise.all(p)).map((o, i) => record(o, `sequence ${String(seqs[k].id)} step ${i}`))),
    );
    stream.end();
    return { values, outputNames };
  }
  const send = (step: Step): Promise<Outcome> => (transport === 'http' ? httpStep(server.http, step) : grpcStep(client, step));
  const values = await Promise.all(
    seqs.map(async (seq) => {
      const got: number[] = [];
      for (const step of stepsOf(model, seq)) got.push(record(await send(step), `sequence ${String(seq.id)} step ${got.length}`));
      return got;
    }),
  );
  return { values, outputNames };
}

const inferenceCount = async (model: string): Promise<number> => {
  const body = (await getJson(`${server.http}/v2/models/${model}/stats`)).body as Msg;
  return Number(body.model_stats[0].inference_count);
};

const CASES: [string, Transport, number][] = [
  ['accumulator', 'http', 1], ['accumulator', 'grpc', 2], ['accumulator', 'stream', 3],
  ['sequence_sum_py', 'http', 4], ['sequence_sum_py', 'grpc', 5], ['sequence_sum_py', 'stream', 6],
  ['sequence_sum_py2', 'http', 7], ['sequence_sum_py2', 'stream', 8],
];

describe('64 interleaved sequences of random length', () => {
  it.each(CASES)('%s over %s: exact running sums, state kept inside the server, every request counted once', async (model, transport, seed) => {
    const seqs = planSequences(seed, 64, 12, (k) => BigInt(seed * 100_000 + 1000 + k));
    const before = await inferenceCount(model);
    const { values, outputNames } = await drive(transport, model, seqs);
    seqs.forEach((s, k) => expect({ id: String(s.id), got: values[k] }).toEqual({ id: String(s.id), got: runningSums(s.values) }));
    // The state output (ACC_OUT) is the server's: the client gets OUTPUT only.
    expect([...outputNames]).toEqual(['OUTPUT']);
    // Padding rows of empty direct slots are executed but are not inferences.
    const requests = seqs.reduce((n, s) => n + s.values.length, 0);
    expect((await inferenceCount(model)) - before).toBe(requests);
    // Every sequence ended: no slot stays taken.
    const slots = [...server.scheduler.sequenceSlotsInUse()].filter(([key]) => key.startsWith(`${model}/`));
    expect(slots.map(([, n]) => n)).toEqual([0]);
  }, 180_000);
});

describe('correlation ids', () => {
  const stringIds = (tag: string) => (k: number): SequenceId => `${tag}-${k}-séq`;

  it.each(['http', 'grpc', 'stream'] as Transport[])('STRING ids on a TYPE_STRING CORRID model over %s', async (transport) => {
    const seqs = planSequences(11, 16, 8, stringIds(`str-${transport}`));
    const { values } = await drive(transport, 'sequence_sum_str', seqs);
    seqs.forEach((s, k) => expect(values[k]).toEqual(runningSums(s.values)));
  }, 120_000);

  it('STRING ids on a model without a CORRID control (the direct accumulator)', async () => {
    const seqs = planSequences(12, 16, 8, stringIds('acc'));
    const { values } = await drive('http', 'accumulator', seqs);
    seqs.forEach((s, k) => expect(values[k]).toEqual(runningSums(s.values)));
  }, 120_000);

  it('a uint64 id beyond 2^53 stays exact up to the python model (CORRID and correlation_id() agree)', async () => {
    // Two ids that differ only beyond double precision: mixed up, their sums would merge.
    const big = (1n << 64n) - 59n;
    const seqs: PlannedSequence[] = [{ id: big, values: [5, 6, 7] }, { id: big - 1n, values: [100, 200, 300] }];
    const { values } = await drive('http', 'sequence_sum_py', seqs);
    expect(values).toEqual([[5, 11, 18], [100, 300, 600]]);
  }, 60_000);
});

describe("Triton's documentation models, as Triton's example clients check them", () => {
  const VALUES = [11, 7, 5, 3, 2, 0, 1];
  const seq0 = [0, ...VALUES];
  const seq1 = [100, ...VALUES.map((v) => -v)];

  /** simple_sequence: READY ? INPUT + START : 0; simple_dyna_sequence adds END * CORRID. */
  const expected = (values: number[], id: number, dyna: boolean) =>
    values.map((v, i) => v + (i === 0 ? 1 : 0) + (dyna && i === values.length - 1 ? id : 0));

  it.each([
    ['simple_sequence', false, 'stream'],
    ['simple_dyna_sequence', true, 'stream'],
    ['simple_sequence', false, 'http'],
    ['simple_dyna_sequence', true, 'http'],
  ] as [string, boolean, Transport][])('%s (adds END * CORRID: %s) over %s', async (model, dyna, transport) => {
    const seqs: PlannedSequence[] = [{ id: 1000n, values: seq0 }, { id: 1001n, values: seq1 }];
    const { values } = await drive(transport, model, seqs);
    expect(values[0]).toEqual(expected(seq0, 1000, dyna));
    expect(values[1]).toEqual(expected(seq1, 1001, dyna));
  }, 60_000);

  it.each(['accumulator', 'simple_dyna_sequence', 'sequence_sum_py'])('%s: model metadata lists the config tensors only, as Triton does (no controls, no state)', async (model) => {
    const body = (await getJson(`${server.http}/v2/models/${model}`)).body as Msg;
    expect(body.inputs).toEqual([{ name: 'INPUT', datatype: 'INT32', shape: [-1, 1] }]);
    expect(body.outputs).toEqual([{ name: 'OUTPUT', datatype: 'INT32', shape: [-1, 1] }]);
  });
});

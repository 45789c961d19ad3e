/**
 * End-to-end: the bad inputs of the sequence batcher, each answered with Triton's words while other
 * sequences of the same model keep their state; a request timeout while its sequence waits in the
 * backlog; and sequences whose clients go away (or that never end) losing their slots after
 * max_sequence_idle_microseconds, so the slots come back (slot counts from the scheduler).
 * Over HTTP, gRPC ModelInfer and gRPC streams; real onnxruntime and python.
 */
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { call, closeWithGrpcClient, startWithGrpcClient, type Client, type Msg } from './helpers/grpc-client';
import { sleep } from './helpers/poll';
import {
  grpcRequest, grpcStep, httpBody, httpStep, planSequences, runningSums, SequenceStream, stepsOf,
  type Outcome, type Step,
} from './helpers/sequence-client';
import { makeRepository, postJson, ROOT, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

let server: Server;
let client: Client;

beforeAll(async () => {
  const repo = makeRepository({
    accumulator: 'models/accumulator',
    sequence_sum_py: 'models/sequence_sum_py',
    accumulator_short_idle: path.join(ROOT, 'test/fixtures/onnx/accumulator_short_idle'),
  });
  ({ server, client } = await startWithGrpcClient(repo));
}, 60_000);

afterAll(() => closeWithGrpcClient({ server, client }));

/** Sequence slots in use in the model's scheduler (its loaded version). */
function slotsInUse(model: string): number {
  const found = [...server.scheduler.sequenceSlotsInUse()].filter(([key]) => key.startsWith(`${model}/`));
  expect(found).toHaveLength(1);
  return found[0][1];
}

/** POSTs a raw JSON body; returns the status and the error text. */
async function httpRaw(model: string, body: string): Promise<{ status: number; error: string }> {
  const r = await postJson(`${server.http}/v2/models/${model}/infer`, body);
  return { status: r.status, error: String(r.body?.error ?? '') };
}

async function grpcError(request: Msg): Promise<grpc.ServiceError> {
  try {
    await call(client, 'ModelInfer', request);
  } catch (e) {
    return e as grpc.ServiceError;
  }
  throw new Error('ModelInfer unexpectedly succeeded');
}

const value = (o: Outcome): number => {
  if (!o.ok) throw new Error(`${o.status} ${o.message}`);
  return o.answer.value;
};

const inputJson = (name: string, v: number, shape = [1, 1]) => ({ name, datatype: 'INT32', shape, data: Array(shape[0]).fill(v) });

const noId = (model: string) => `inference request to model '${model}' must specify a non-zero or non-empty correlation ID`;
const batchOne = (model: string) => `inference request to model '${model}' must specify batch-size 1 due to requirements of sequence batcher`;
const needStart = (id: string, model: string) =>
  `inference request for sequence ${id} to model '${model}' must specify the START flag on the first request of the sequence`;

describe('bad sequence requests get Triton\'s errors', () => {
  it('no correlation id (absent, 0, empty string) over HTTP and gRPC', async () => {
    const plain = JSON.stringify({ inputs: [inputJson('INPUT', 1)] });
    for (const body of [plain, httpBody({ model: 'accumulator', id: 0n, value: 1, start: true, end: false }),
      httpBody({ model: 'accumulator', id: '', value: 1, start: true, end: false })]) {
      expect(await httpRaw('accumulator', body)).toEqual({ status: 400, error: noId('accumulator') });
    }
    const req = grpcRequest({ model: 'accumulator', id: 0n, value: 1, start: true, end: false });
    delete req.parameters.sequence_id;
    const err = await grpcError(req);
    expect([err.code, err.details]).toEqual([grpc.status.INVALID_ARGUMENT, noId('accumulator')]);
  });

  it('batch size 2', async () => {
    const step: Step = { model: 'accumulator', id: 77n, value: 1, start: true, end: false };
    expect(await httpRaw('accumulator', httpBody(step, [], [2, 1]))).toEqual({ status: 400, error: batchOne('accumulator') });
    expect(await httpRaw('sequence_sum_py', httpBody({ ...step, model: 'sequence_sum_py' }, [], [2, 1])))
      .toEqual({ status: 400, error: batchOne('sequence_sum_py') });
  });

  it('no START for an id the model does not know (uint64 and string ids)', async () => {
    expect(await httpStep(server.http, { model: 'accumulator', id: 4242n, value: 1, start: false, end: false }))
      .toEqual({ ok: false, status: 400, message: needStart('4242', 'accumulator') });
    expect(await grpcStep(client, { model: 'sequence_sum_py', id: 'ghost', value: 1, start: false, end: true }))
      .toMatchObject({ ok: false, status: grpc.status.INVALID_ARGUMENT });
    expect(await grpcStep(client, { model: 'accumulator', id: 'ghost', value: 1, start: false, end: true }))
      .toEqual({ ok: false, status: grpc.status.INVALID_ARGUMENT, message: needStart('ghost', 'accumulator') });
  });

  it('a STRING id to a model whose CORRID is UINT64', async () => {
    const step: Step = { model: 'sequence_sum_py', id: 'user-7', value: 1, start: true, end: false, requestId: 'str-1' };
    const expected = "[request id: str-1] sequence batching control 'CORRID' data-type is 'BYTES', but model 'sequence_sum_py' expects 'UINT64'";
    expect(await httpStep(server.http, step)).toEqual({ ok: false, status: 400, message: expected });
    expect(await grpcStep(client, step)).toEqual({ ok: false, status: grpc.status.INVALID_ARGUMENT, message: expected });
  });

  it('a control or state tensor sent by the client', async () => {
    const step: Step = { model: 'accumulator', id: 78n, value: 1, start: true, end: false };
    for (const extra of ['START', 'READY', 'ACC_IN']) {
      const r = await httpRaw('accumulator', httpBody(step, [inputJson(extra, 1)]));
      expect(r.status).toBe(400);
      expect(r.error).toContain("expected 1 inputs but got 2 inputs for model 'accumulator'");
    }
    // In place of INPUT: a name the model's config does not have.
    const only = `{"parameters":{"sequence_id":79,"sequence_start":true},"inputs":[${JSON.stringify(inputJson('START', 1))}]}`;
    expect(await httpRaw('accumulator', only)).toEqual({ status: 400, error: "unexpected inference input 'START' for model 'accumulator'" });
  });

  it('other sequences keep their state while every bad request above hits the same models, their ids included', async () => {
    const good = [
      ...planSequences(21, 4, 10, (k) => BigInt(9000 + k)).map((s) => ({ ...s, model: 'accumulator' })),
      ...planSequences(22, 4, 10, (k) => BigInt(9100 + k)).map((s) => ({ ...s, model: 'sequence_sum_py' })),
    ];
    const longest = Math.max(...good.map((s) => s.values.length));
    const got: number[][] = good.map(() => []);
    for (let i = 0; i < longest; i++) {
      const live = good.filter((s) => i < s.values.length);
      await Promise.all(
        live.map(async (s) => {
          const step = stepsOf(s.model, s)[i];
          // Bad requests carrying this live sequence's id: none may reach its state.
          const twice = await httpRaw(s.model, httpBody({ ...step, start: false, end: false }, [], [2, 1]));
          expect(twice.status).toBe(400);
          const control = await httpRaw(s.model, httpBody({ ...step, start: true, end: true }, [inputJson('START', 1)]));
          expect(control.status).toBe(400);
          if (s.model === 'sequence_sum_py') {
            const str = await httpStep(server.http, { ...step, id: String(step.id), start: false });
            expect(str.ok).toBe(false);
          }
          got[good.indexOf(s)].push(value(await (i % 2 ? grpcStep(client, step) : httpStep(server.http, step))));
        }),
      );
      // Requests with no id, and for ids nobody started, in between.
      expect((await httpRaw(live[0].model, JSON.stringify({ inputs: [inputJson('INPUT', 1)] }))).status).toBe(400);
      expect((await httpStep(server.http, { model: live[0].model, id: 123456n + BigInt(i), value: 5, start: false, end: false })).ok).toBe(false);
    }
    good.forEach((s, k) => expect(got[k]).toEqual(runningSums(s.values)));
    // Every good sequence ended; no bad request took a slot.
    expect(slotsInUse('accumulator')).toBe(0);
    expect(slotsInUse('sequence_sum_py')).toBe(0);
  }, 120_000);
});

describe('the backlog (accumulator: 8 slots, idle time 5 s)', () => {
  it("a request timeout passing while its sequence waits for a slot fails it in Triton's words; the sequences in the slots go on", async () => {
    const holders = Array.from({ length: 8 }, (_, k) => BigInt(8000 + k));
    const held = await Promise.all(holders.map((id, k) => httpStep(server.http, { model: 'accumulator', id, value: k, start: true, end: false })));
    expect(held.map(value)).toEqual(holders.map((_, k) => k));
    expect(slotsInUse('accumulator')).toBe(8);
    // A ninth sequence finds no slot; its request may wait 200 ms (the holders keep theirs for 5 s).
    const waiting = `{"parameters":{"sequence_id":8100,"sequence_start":true,"timeout":200000},"inputs":[${JSON.stringify(inputJson('INPUT', 1))}]}`;
    expect(await httpRaw('accumulator', waiting)).toEqual({ status: 503, error: 'timeout of the corresponding sequence has been expired' });
    const ended = await Promise.all(holders.map((id, k) => httpStep(server.http, { model: 'accumulator', id, value: 100, start: false, end: true })));
    expect(ended.map(value)).toEqual(holders.map((_, k) => k + 100));
    expect(slotsInUse('accumulator')).toBe(0);
    // The timed-out sequence is gone: it starts afresh.
    expect(await httpStep(server.http, { model: 'accumulator', id: 8100n, value: 2, start: false, end: true }))
      .toEqual({ ok: false, status: 400, message: needStart('8100', 'accumulator') });
    expect(value(await httpStep(server.http, { model: 'accumulator', id: 8100n, value: 2, start: true, end: true }))).toBe(2);
  }, 60_000);
});

describe('idle sequences lose their slots (max_sequence_idle_microseconds 300 ms, 8 slots)', () => {
  const MODEL = 'accumulator_short_idle';
  /** Comfortably past the model's 300 ms idle time on a loaded machine. */
  const PAST_IDLE_MS = 2000;

  it('an expired id needs START again; with START it begins a fresh sum', async () => {
    const step = (value: number, start: boolean): Step => ({ model: MODEL, id: 5000n, value, start, end: false });
    expect(value(await httpStep(server.http, step(3, true)))).toBe(3);
    expect(value(await httpStep(server.http, step(4, false)))).toBe(7);
    await sleep(PAST_IDLE_MS);
    expect(await httpStep(server.http, step(1, false))).toEqual({ ok: false, status: 400, message: needStart('5000', MODEL) });
    expect(value(await httpStep(server.http, step(10, true)))).toBe(10);
    expect(value(await httpStep(server.http, { ...step(1, false), end: true }))).toBe(11);
  }, 60_000);

  it('sequences whose clients went away (HTTP abandoned, aborted, gRPC stream cancelled) free every slot', async () => {
    const abandonedIds: bigint[] = [];
    // 3 HTTP sequences that never end.
    for (let k = 0; k < 3; k++) {
      const id = 6000n + BigInt(k);
      abandonedIds.push(id);
      expect(value(await httpStep(server.http, { model: MODEL, id, value: 1, start: true, end: false }))).toBe(1);
    }
    // 2 HTTP sequences whose second request's client disconnects before the answer.
    for (let k = 0; k < 2; k++) {
      const id = 6100n + BigInt(k);
      abandonedIds.push(id);
      expect(value(await httpStep(server.http, { model: MODEL, id, value: 1, start: true, end: false }))).toBe(1);
      const abort = new AbortController();
      const sent = httpStep(server.http, { model: MODEL, id, value: 1, start: false, end: false }, abort.signal).catch(() => undefined);
      abort.abort();
      await sent;
    }
    // 3 sequences on gRPC streams cancelled mid-sequence, requests still in flight.
    for (let k = 0; k < 3; k++) {
      const id = 6200n + BigInt(k);
      abandonedIds.push(id);
      const stream = new SequenceStream(client);
      expect(value(await stream.send({ model: MODEL, id, value: 1, start: true, end: false }))).toBe(1);
      void stream.send({ model: MODEL, id, value: 2, start: false, end: false });
      void stream.send({ model: MODEL, id, value: 3, start: false, end: false });
      stream.cancel();
      await stream.closed;
    }
    expect(abandonedIds).toHaveLength(8);
    // The 3 sequences left alone hold their slots; a cancelled request may have ended its own
    // sequence already (as Triton releases a cancelled sequence).
    expect(slotsInUse(MODEL)).toBeGreaterThanOrEqual(3);
    expect(slotsInUse(MODEL)).toBeLessThanOrEqual(8);
    await sleep(PAST_IDLE_MS);
    expect(slotsInUse(MODEL)).toBe(0);
    // All 8 slots must be free again: 8 new sequences run to their end (were any slot kept, its
    // sequences would wait in the backlog for good).
    const fresh = planSequences(31, 8, 6, (k) => BigInt(7000 + k));
    const sums = await Promise.all(
      fresh.map(async (s) => {
        const out: number[] = [];
        for (const st of stepsOf(MODEL, s)) out.push(value(await httpStep(server.http, st)));
        return out;
      }),
    );
    fresh.forEach((s, k) => expect(sums[k]).toEqual(runningSums(s.values)));
    // They ended: their slots are free at once.
    expect(slotsInUse(MODEL)).toBe(0);
    // The abandoned ids are gone: without START they are refused.
    for (const id of abandonedIds) {
      expect(await httpStep(server.http, { model: MODEL, id, value: 1, start: false, end: true }))
        .toEqual({ ok: false, status: 400, message: needStart(String(id), MODEL) });
    }
  }, 120_000);
});

/**
 * End-to-end: the trace extension writes Triton's trace JSON. A real server traces every request
 * (rate 1) into `<file>.<n>` files (log frequency 1); the tests read them back: the timestamps of
 * a plain model over HTTP in Triton's order, an ensemble and its step (parent_id), a decoupled
 * python model over a gRPC stream (one INFER_RESPONSE_COMPLETE per response), TENSORS dumps,
 * rate / count sampling, log-frequency rotation, and `trace_file` only inside --trace-dir.
 */
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { inferenceClient, openInferStream, type Client, type Msg } from './helpers/grpc-client';
import { waitFor } from './helpers/poll';
import { getJson, makeRepository, MODELS, postJson, ROOT, startTestServer } from './helpers/server';
import { recordsOf, traceEveryRequest, type TraceRecord } from './helpers/trace-files';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const FIX = path.join(ROOT, 'test/fixtures/python');

/** The trace (head record and its timestamps) of the request with this id. */
function traceOf(records: TraceRecord[], requestId: string, model?: string): { head: TraceRecord; names: string[]; ns: number[]; all: TraceRecord[] } | undefined {
  const head = records.find((r) => r.request_id === requestId && r.model_name !== undefined && (model === undefined || r.model_name === model));
  if (!head) return undefined;
  const all = records.filter((r) => r.id === head.id);
  const ts = all.find((r) => r.timestamps)?.timestamps;
  if (!ts) return undefined;
  return { head, names: ts.map((t) => t.name), ns: ts.map((t) => t.ns), all };
}

/** The timestamps named, in this order, each no earlier than the one before. */
function expectInOrder(trace: { names: string[]; ns: number[] }, order: string[]): void {
  const at = order.map((n) => {
    const i = trace.names.indexOf(n);
    expect({ name: n, found: i >= 0 }).toEqual({ name: n, found: true });
    return trace.ns[i];
  });
  for (let i = 1; i < at.length; i++) expect({ step: `${order[i - 1]} <= ${order[i]}`, ok: at[i - 1] <= at[i] }).toEqual({ step: `${order[i - 1]} <= ${order[i]}`, ok: true });
}

const simpleBody = (id: string, base = 0) => ({
  id,
  inputs: [
    { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, (_, i) => base + i) },
    { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(1) },
  ],
});

describe('trace extension: Triton trace files', () => {
  let server: Server;
  let client: Client;
  let dir = '';
  const records = () => recordsOf(dir, 'trace.json');

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'nereid-trace-'));
    mkdirSync(path.join(dir, 'sub'));
    const repo = makeRepository({
      simple: path.join(MODELS, 'simple'),
      slow_scale: path.join(FIX, 'slow_scale'),
      ensemble_flat: path.join(FIX, 'ensemble_flat'),
      decoupled_repeat: path.join(FIX, 'decoupled_repeat'),
    });
    server = await startTestServer({
      modelRepositories: [repo],
      trace: traceEveryRequest(dir),
    });
    client = inferenceClient(server.grpcPort);
  }, 120_000);
  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it('lists the trace extension and shows the start-up settings', async () => {
    expect(((await getJson(`${server.http}/v2`)).body as Msg).extensions).toContain('trace');
    expect((await getJson(`${server.http}/v2/trace/setting`)).body).toEqual({
      trace_level: ['TIMESTAMPS'],
      trace_rate: '1',
      trace_count: '-1',
      log_frequency: '1',
      trace_file: path.join(dir, 'trace.json'),
      trace_mode: 'triton',
    });
  });

  it("writes a plain model's HTTP request with Triton's timestamps in order", async () => {
    const r = await postJson(`${server.http}/v2/models/simple/infer`, simpleBody('plain-1'));
    expect(r.status).toBe(200);
    const t = await waitFor('the trace of plain-1', () => traceOf(records(), 'plain-1'));
    expect(t.head).toMatchObject({ model_name: 'simple', model_version: 1, request_id: 'plain-1' });
    expect(t.head.parent_id).toBeUndefined();
    expectInOrder(t, [
      'HTTP_RECV_START',
      'HTTP_RECV_END',
      'REQUEST_START',
      'QUEUE_START',
      'COMPUTE_START',
      'COMPUTE_INPUT_END',
      'COMPUTE_OUTPUT_START',
      'COMPUTE_END',
      'REQUEST_END',
      'HTTP_SEND_START',
      'HTTP_SEND_END',
    ]);
    expectInOrder(t, ['QUEUE_START', 'INFER_RESPONSE_COMPLETE', 'REQUEST_END']);
    // TIMESTAMPS only: no tensor records.
    expect(t.all.some((x) => x.activity)).toBe(false);
  });

  it('writes an ensemble and its step, the step naming the ensemble as parent_id', async () => {
    const r = await postJson(`${server.http}/v2/models/ensemble_flat/infer`, {
      id: 'ens-1',
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] }],
    });
    expect(r.status).toBe(200);
    const parent = await waitFor('the ensemble trace', () => traceOf(records(), 'ens-1', 'ensemble_flat'));
    const child = await waitFor('the step trace', () => {
      const all = records();
      const head = all.find((x) => x.parent_id === parent.head.id);
      return head ? traceOf(all.filter((x) => x.id === head.id), 'ens-1') : undefined;
    });
    expect(parent.head).toMatchObject({ model_name: 'ensemble_flat', model_version: 1 });
    expect(child.head).toMatchObject({ model_name: 'slow_scale', model_version: 1, parent_id: parent.head.id });
    expectInOrder(parent, ['HTTP_RECV_END', 'REQUEST_START', 'QUEUE_START', 'REQUEST_END', 'HTTP_SEND_START', 'HTTP_SEND_END']);
    // As in Triton, the ensemble computes nothing itself: its step's trace holds the compute.
    expect(parent.names.some((n) => n.startsWith('COMPUTE_'))).toBe(false);
    expectInOrder(child, ['REQUEST_START', 'QUEUE_START', 'COMPUTE_START', 'COMPUTE_END', 'REQUEST_END']);
    // The step runs inside the ensemble's request.
    const at = (t: { names: string[]; ns: number[] }, n: string) => t.ns[t.names.indexOf(n)];
    expect(at(child, 'REQUEST_START')).toBeGreaterThanOrEqual(at(parent, 'REQUEST_START'));
    expect(at(child, 'REQUEST_END')).toBeLessThanOrEqual(at(parent, 'REQUEST_END'));
    // A step is no client request: no front-door timestamps of its own.
    expect(child.names.some((n) => n.startsWith('HTTP_'))).toBe(false);
  });

  it('writes a decoupled model over a gRPC stream: one INFER_RESPONSE_COMPLETE per response', async () => {
    const { stream, messages, done } = openInferStream(client);
    const values = Int32Array.from([5, 6, 7]);
    stream.write({
      id: 'dec-1',
      model_name: 'decoupled_repeat',
      inputs: [{ name: 'IN', datatype: 'INT32', shape: [3] }],
      raw_input_contents: [Buffer.from(values.buffer)],
    });
    stream.end();
    await done;
    expect(messages.filter((m) => m.error_message === '').length).toBeGreaterThanOrEqual(3);
    const t = await waitFor('the decoupled trace', () => traceOf(records(), 'dec-1'));
    expect(t.head).toMatchObject({ model_name: 'decoupled_repeat', model_version: 1 });
    expect(t.names.filter((n) => n === 'INFER_RESPONSE_COMPLETE')).toHaveLength(3);
    expectInOrder(t, ['GRPC_WAITREAD_START', 'GRPC_WAITREAD_END', 'REQUEST_START', 'QUEUE_START', 'COMPUTE_START', 'INFER_RESPONSE_COMPLETE', 'GRPC_SEND_START']);
    // Each response is sent after it completed; the bare final flag after REQUEST_END.
    expect(t.names.filter((n) => n === 'GRPC_SEND_END').length).toBe(4);
    expect(t.ns[t.names.lastIndexOf('GRPC_SEND_END')]).toBeGreaterThanOrEqual(t.ns[t.names.indexOf('REQUEST_END')]);
    // Responses in the order they were sent, the last before REQUEST_END.
    const responses = t.ns.filter((_, i) => t.names[i] === 'INFER_RESPONSE_COMPLETE');
    expect([...responses].sort((a, b) => a - b)).toEqual(responses);
    expect(responses[2]).toBeLessThanOrEqual(t.ns[t.names.indexOf('REQUEST_END')]);
  });

  it('samples per model: every rate-th request, count at most, TENSORS dumped, files rotated', async () => {
    const set = await postJson(`${server.http}/v2/models/simple/trace/setting`, {
      trace_level: ['TIMESTAMPS', 'TENSORS'],
      trace_rate: '2',
      trace_count: '2',
      log_frequency: '2',
      trace_file: 'sub/simple.json',
    });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ trace_rate: '2', trace_count: '2', log_frequency: '2', trace_file: path.join(dir, 'sub', 'simple.json') });
    for (let k = 0; k < 6; k++) {
      expect((await postJson(`${server.http}/v2/models/simple/infer`, simpleBody(`s-${k}`, k * 100))).status).toBe(200);
    }
    // Requests 2 and 4 (every 2nd), then the count is spent; two traces fill the first file.
    const rotated = await waitFor('sub/simple.json.0', () => {
      const f = path.join(dir, 'sub', 'simple.json.0');
      return existsSync(f) ? recordsOf(path.join(dir, 'sub'), 'simple.json') : undefined;
    });
    const ids = rotated.filter((r) => r.model_name).map((r) => r.request_id);
    expect(ids).toEqual(['s-1', 's-3']);
    expect(existsSync(path.join(dir, 'sub', 'simple.json.1'))).toBe(false);
    expect(((await getJson(`${server.http}/v2/models/simple/trace/setting`)).body as Msg).trace_count).toBe('0');
    // The global settings are the model's no longer.
    expect(((await getJson(`${server.http}/v2/trace/setting`)).body as Msg).trace_rate).toBe('1');
    const s1 = traceOf(rotated, 's-1')!;
    const tensors = s1.all.filter((r) => r.activity);
    expect(tensors).toContainEqual({
      id: s1.head.id,
      activity: 'TENSOR_QUEUE_INPUT',
      tensor: { name: 'INPUT0', data: Array.from({ length: 16 }, (_, i) => 100 + i).join(','), shape: '1,16', dtype: 'INT32' },
    });
    expect(tensors).toContainEqual({
      id: s1.head.id,
      activity: 'TENSOR_BACKEND_OUTPUT',
      tensor: { name: 'OUTPUT0', data: Array.from({ length: 16 }, (_, i) => 101 + i).join(','), shape: '1,16', dtype: 'INT32' },
    });
    // Back to the global settings.
    const cleared = await postJson(`${server.http}/v2/models/simple/trace/setting`, {
      trace_level: null, trace_rate: null, trace_count: null, log_frequency: null, trace_file: null,
    });
    expect(cleared.body).toMatchObject({ trace_rate: '1', trace_file: path.join(dir, 'trace.json') });
  });

  it("accepts trace_file only inside --trace-dir", async () => {
    const outside = await postJson(`${server.http}/v2/trace/setting`, { trace_file: '../elsewhere.json' });
    expect(outside.status).toBe(400);
    expect(outside.body.error).toBe(
      `'trace_file' must name a file under the directory given by --trace-dir ('${dir}'): '../elsewhere.json' is outside it`,
    );
    const absolute = await postJson(`${server.http}/v2/trace/setting`, { trace_file: '/etc/passwd' });
    expect(absolute.status).toBe(400);
    expect(((await getJson(`${server.http}/v2/trace/setting`)).body as Msg).trace_file).toBe(path.join(dir, 'trace.json'));
  });
});

describe('trace extension without --trace-dir', () => {
  let server: Server;
  beforeAll(async () => {
    server = await startTestServer({ modelRepositories: [makeRepository({ simple: path.join(MODELS, 'simple') })] });
  }, 60_000);
  afterAll(() => server?.close());

  it("keeps Triton's answer to trace_file, and traces nothing while the level is OFF", async () => {
    const r = await postJson(`${server.http}/v2/trace/setting`, { trace_file: '/tmp/x.json' });
    expect(r.status).toBe(501);
    expect(r.body.error).toBe('trace file location can not be updated through network protocol');
    expect(server.core.tracing).toBe(false);
    const on = await postJson(`${server.http}/v2/trace/setting`, { trace_level: ['TIMESTAMPS'] });
    expect(on.body.trace_level).toEqual(['TIMESTAMPS']);
    expect(server.core.tracing).toBe(true);
    await postJson(`${server.http}/v2/trace/setting`, { trace_level: ['OFF'] });
    expect(server.core.tracing).toBe(false);
  });
});

import type { ExecutionStats, InferenceRequest, InferenceResponse, RequestTrace } from '@nereid/protocol';
import type { InferFn, LoadContext, ModelInstance } from '../backend';
import { PythonBackend } from './python-backend';
import { CollectingSink, config, f32, FIXTURES, i32, loadContext, MODELS, request, run, text, values } from './testing';

const backend = new PythonBackend();
const io = (name: string, dims = [4]): [string, string, number[]] => [name, 'TYPE_FP32', dims];

interface Line {
  level: string;
  message: string;
  ids?: string[];
}

/** A LoadContext whose log keeps the ids of the requests each line is about. */
function withLog(ctx: LoadContext, lines: Line[]): LoadContext {
  return { ...ctx, log: (level, message, requests) => lines.push({ level, message, ids: requests?.map((r) => r.id) }) };
}

/** A trace object standing for the core's (only its identity matters here). */
const trace = (): RequestTrace => ({ mark: () => undefined, release: () => undefined });

describe('PythonBackend: what a model logs and calls, tied to its requests', () => {
  const loaded: ModelInstance[] = [];
  afterAll(() => Promise.all(loaded.map((i) => i.unload())));

  it("gives a log line written in execute the batch's requests (padding rows left out); initialize and finalize lines none", async () => {
    const lines: Line[] = [];
    const cfg = config('log_requests', [io('INPUT0', [-1])], [io('OUTPUT0', [-1])], { max_batch_size: 4 });
    const inst = await backend.loadInstance(withLog(loadContext(FIXTURES, cfg), lines));
    const init = lines.find((l) => l.message.endsWith('log_requests initialize'));
    expect(init).toMatchObject({ level: 'info', ids: undefined });
    const padding = request('log_requests', [f32('INPUT0', [0], [1, 1])], { padding: true });
    const sinks = await run(inst, [
      request('log_requests', [f32('INPUT0', [5], [1, 1])], { id: 'a' }),
      request('log_requests', [f32('INPUT0', [6], [1, 1])], { id: 'b' }),
      padding,
    ]);
    expect(values(sinks[0].output('OUTPUT0'))).toEqual([5]);
    const execute = lines.filter((l) => / tag 5$/.test(l.message));
    expect(execute.map((l) => l.level)).toEqual(['info', 'warn', 'error', 'verbose']);
    for (const l of execute) expect(l.ids).toEqual(['a', 'b']);
    expect(execute[0].message).toMatch(/^model\.py:\d+\] log_requests execute 3 request\(s\) tag 5$/);
    await inst.unload();
    expect(lines.find((l) => l.message.endsWith('log_requests finalize'))).toMatchObject({ level: 'info', ids: undefined });
  });

  it("links a BLS call made with request.trace() to that request's trace; one made without it is never traced (null)", async () => {
    const seen: InferenceRequest[] = [];
    const addSub = await backend.loadInstance(loadContext(MODELS, config('add_sub', [io('add_sub_input0'), io('add_sub_input1')], [io('added_output'), io('subbed_output')])));
    loaded.push(addSub);
    const infer: InferFn = (req) =>
      new Promise<InferenceResponse[]>((resolve, reject) => {
        seen.push(req);
        void addSub.execute([{ request: req, sink: { send: (r, final) => final && resolve(r ? [r] : []), fail: reject } }]);
      });
    const cfg = config('bls_traced', [io('INPUT0'), io('INPUT1')], [io('SUM'), io('DIFFERENCE')]);
    const inst = await backend.loadInstance(loadContext(FIXTURES, cfg, [], infer));
    loaded.push(inst);
    const parentTrace = trace();
    const traced = request('bls_traced', [f32('INPUT0', [5, 6, 7, 8]), f32('INPUT1', [1, 2, 3, 4])], { id: 'p', trace: parentTrace });
    const [sink] = await run(inst, [traced]);
    expect(sink.error).toBeUndefined();
    expect(values(sink.output('SUM'))).toEqual([6, 8, 10, 12]);
    const byId = new Map(seen.map((r) => [r.id, r]));
    expect(byId.get('sync-p')?.parentTrace).toBe(parentTrace);
    expect(byId.get('async-p')?.parentTrace).toBe(parentTrace);
    expect(byId.get('untraced-p')?.parentTrace).toBeNull();
    // A caller that is not traced: its BLS calls are not traced either.
    seen.length = 0;
    await run(inst, [request('bls_traced', [f32('INPUT0', [1, 1, 1, 1]), f32('INPUT1', [1, 1, 1, 1])], { id: 'q' })]);
    expect(seen.map((r) => r.parentTrace)).toEqual([null, null, null]);
  });

  it("gives request.trace().get_context() the trace's context (OpenTelemetry), and None to a request without one", async () => {
    const cfg = config('trace_context', [['IN', 'TYPE_INT32', [1]]], [['CONTEXT', 'TYPE_STRING', [1]], ['HAS_CONTEXT', 'TYPE_BOOL', [1]]]);
    const inst = await backend.loadInstance(loadContext(FIXTURES, cfg));
    loaded.push(inst);
    const context = '{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}';
    const otel: RequestTrace = { ...trace(), context };
    // One batch: traced in OpenTelemetry mode, traced in Triton mode (no context), not traced.
    const sinks = await run(inst, [
      request('trace_context', [i32('IN', [1])], { trace: otel }),
      request('trace_context', [i32('IN', [2])], { trace: trace() }),
      request('trace_context', [i32('IN', [3])]),
    ]);
    expect(sinks.map((s) => text(s.output('CONTEXT')))).toEqual([[context], [''], ['']]);
    expect(sinks.map((s) => values(s.output('HAS_CONTEXT')))).toEqual([[1], [0], [0]]);
  });

  it('counts the write that hands a batch to the stub in compute_infer, not compute_input (as Triton\'s python backend does)', async () => {
    const inst = await backend.loadInstance(loadContext(MODELS, config('add_sub', [io('add_sub_input0'), io('add_sub_input1')], [io('added_output'), io('subbed_output')])));
    loaded.push(inst);
    // A stub socket whose write takes 40 ms (the stub waking late on a busy machine, say).
    const proc = (inst as unknown as { proc: { send: (...a: unknown[]) => void } }).proc;
    const send = proc.send.bind(proc);
    proc.send = (...a: unknown[]) => {
      const until = performance.now() + 40;
      while (performance.now() < until);
      send(...a);
    };
    const reported: ExecutionStats[] = [];
    const sink = new CollectingSink();
    const req = request('add_sub', [f32('add_sub_input0', [1, 2, 3, 4]), f32('add_sub_input1', [1, 1, 1, 1])]);
    await inst.execute([{ request: req, sink }], (_items, stats) => reported.push(stats));
    await sink.done;
    expect(values(sink.output('added_output'))).toEqual([2, 3, 4, 5]);
    expect(reported).toHaveLength(1);
    expect(reported[0].inputNs).toBeLessThan(40e6);
    expect(reported[0].inferNs).toBeGreaterThanOrEqual(40e6);
  });
});

import type { ModelInstance } from '../backend';
import { PythonBackend } from './python-backend';
import { config, f32, FIXTURES, i32, loadContext, request, run, values, type LogLine } from './testing';

const backend = new PythonBackend();
const one = (name: string, t = 'TYPE_FP32'): [string, string, number[]] => [name, t, [1]];
const load = (name: string, logs: LogLine[] = [], inputs = [one('INPUT0')], outputs = [one('OUTPUT0')]) =>
  backend.loadInstance(loadContext(FIXTURES, config(name, inputs, outputs), logs));

describe('PythonBackend: failures', () => {
  const instances: ModelInstance[] = [];
  afterAll(() => Promise.all(instances.map((i) => i.unload())));
  const track = <T extends ModelInstance>(i: T): T => (instances.push(i), i);

  it('fails every request of a batch whose execute raised, with the Python error and frames; other batches succeed', async () => {
    const inst = track(await load('execute_raises'));
    const sinks = await run(inst, [request('m', [f32('INPUT0', [1])]), request('m', [f32('INPUT0', [-2])])]);
    for (const s of sinks) {
      expect(s.error?.code).toBe('INTERNAL');
      expect(s.error?.message).toMatch(/^Failed to process the request\(s\) for model 'execute_raises_0_0', message: ValueError: execute exploded on -2\n\nAt:\n {2}.*model\.py\(\d+\): check\n {2}.*model\.py\(\d+\): execute/);
    }
    const [ok] = await run(inst, [request('m', [f32('INPUT0', [3])])]);
    expect(values(ok.output('OUTPUT0'))).toEqual([3]);
  });

  it('fails only the request answered with an error response, with its code', async () => {
    const inst = track(await load('error_response'));
    const [good, bad] = await run(inst, [request('m', [f32('INPUT0', [1])]), request('m', [f32('INPUT0', [-1])])]);
    expect(values(good.output('OUTPUT0'))).toEqual([1]);
    expect(bad.error).toMatchObject({ code: 'INVALID_ARG', message: 'input must not be negative' });
  });

  it.each([
    ['short', 'Number of InferenceResponse objects do not match the number of InferenceRequest objects. InferenceRequest(s) size is:2, and InferenceResponse(s) size is:1'],
    ['not_list', "Expected a list in the execute return, found type 'dict'."],
    ['bad_item', "Expected an 'InferenceResponse' object in the execute function return list, found type 'str'."],
  ])('fails the whole batch when execute returns %s', async (mode, message) => {
    const inst = track(await load('bad_return'));
    const params = { parameters: { mode } };
    const sinks = await run(inst, [request('m', [f32('INPUT0', [1])], params), request('m', [f32('INPUT0', [2])], params)]);
    for (const s of sinks) expect(s.error).toMatchObject({ code: 'INTERNAL', message });
    const [ok] = await run(inst, [request('m', [f32('INPUT0', [5])])]);
    expect(values(ok.output('OUTPUT0'))).toEqual([5]);
  });

  it('accepts answers sent through the response sender in default mode', async () => {
    const inst = track(await load('sender_default'));
    const [a, b] = await run(inst, [request('m', [f32('INPUT0', [1])]), request('m', [f32('INPUT0', [2])])]);
    expect(values(a.output('OUTPUT0'))).toEqual([10]);
    expect(values(b.output('OUTPUT0'))).toEqual([20]);
    expect([a.responses.length, a.finals]).toEqual([1, 1]);
  });

  it('rejects the load with the Python traceback when initialize raises', async () => {
    const err = await load('init_raises').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ name: 'InferenceError', code: 'INTERNAL' });
    const message = (err as Error).message;
    expect(message).toContain("Failed to initialize Python stub for model 'init_raises'");
    expect(message).toContain('Traceback (most recent call last)');
    expect(message).toMatch(/model\.py", line \d+, in load_weights/);
    expect(message).toContain('RuntimeError: initialize refused: no weights at /nonexistent/weights.bin');
  });

  it.each([
    [1, 'killed by signal SIGKILL'],
    [2, 'exited with code 7'],
  ])('fails in-flight requests when the stub dies (mode %i), restarts it, and serves the next request', async (mode, how) => {
    const logs: LogLine[] = [];
    const inst = track(await load('crash', logs, [one('MODE', 'TYPE_INT32')], [one('PID', 'TYPE_INT64')]));
    const [before] = await run(inst, [request('crash', [i32('MODE', [0])])]);
    const [dying, sibling] = await run(inst, [request('crash', [i32('MODE', [mode])]), request('crash', [i32('MODE', [0])])]);
    for (const s of [dying, sibling]) {
      expect(s.error?.code).toBe('INTERNAL');
      expect(s.error?.message).toContain(`python stub of model 'crash' (instance 'crash_0_0') ${how}`);
    }
    const [after] = await run(inst, [request('crash', [i32('MODE', [0])])]);
    expect(after.error).toBeUndefined();
    expect(values(after.output('PID'))[0]).not.toBe(values(before.output('PID'))[0]);
    expect(logs.some((l) => l.level === 'error' && l.message.includes('restarting'))).toBe(true);
  });

  it('takes a second batch while the first runs; a crash fails both batches in flight', async () => {
    const inst = track(await load('crash', [], [one('MODE', 'TYPE_INT32')], [one('PID', 'TYPE_INT64')]));
    expect(inst.concurrency).toBe(2);
    const [a, b] = await Promise.all([
      run(inst, [request('crash', [i32('MODE', [0])])]),
      run(inst, [request('crash', [i32('MODE', [0])])]),
    ]);
    expect(values(a[0].output('PID'))).toEqual(values(b[0].output('PID')));
    const [dying, queued] = await Promise.all([
      run(inst, [request('crash', [i32('MODE', [1])])]),
      run(inst, [request('crash', [i32('MODE', [0])])]),
    ]);
    for (const s of [dying[0], queued[0]]) expect(s.error?.message).toContain('killed by signal SIGKILL');
    const [after] = await run(inst, [request('crash', [i32('MODE', [0])])]);
    expect(after.error).toBeUndefined();
  });

  it('stops a stub that writes a malformed frame: its request fails, the server goes on with a new stub', async () => {
    const logs: LogLine[] = [];
    const inst = track(await load('crash', logs, [one('MODE', 'TYPE_INT32')], [one('PID', 'TYPE_INT64')]));
    const [bad] = await run(inst, [request('crash', [i32('MODE', [3])])]);
    expect(bad.error?.message).toContain('killed by signal SIGKILL');
    expect(logs.some((l) => l.message.includes('malformed frame (frame body of 3 bytes'))).toBe(true);
    const [after] = await run(inst, [request('crash', [i32('MODE', [0])])]);
    expect(after.error).toBeUndefined();
  });

  it('reports a missing interpreter as a load failure', async () => {
    const b = new PythonBackend({ pythonExecutable: '/nonexistent/python3' });
    await expect(b.loadInstance(loadContext(FIXTURES, config('identity', [one('INPUT0')], [one('OUTPUT0')])))).rejects.toMatchObject({
      code: 'INTERNAL',
    });
  });

  it('rejects a bad FORCE_CPU_ONLY_INPUT_TENSORS value', async () => {
    const cfg = config('identity', [one('INPUT0')], [one('OUTPUT0')], { parameters: { FORCE_CPU_ONLY_INPUT_TENSORS: { string_value: 'maybe' } } });
    await expect(backend.loadInstance(loadContext(FIXTURES, cfg))).rejects.toMatchObject({
      code: 'UNSUPPORTED', message: 'Incorrect value for FORCE_CPU_ONLY_INPUT_TENSORS: maybe',
    });
  });
});

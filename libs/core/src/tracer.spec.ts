import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { InferenceRequest } from '@nereid/protocol';
import { InferenceError, newInferenceRequest } from '@nereid/protocol';
import { fileUnder } from './trace-paths';
import { defaultTraceStartup } from './trace-settings';
import { Tracer } from './tracer';

function request(id: string, parentTrace?: InferenceRequest['trace']): InferenceRequest {
  const r = newInferenceRequest('m', -1);
  r.id = id;
  r.inputs = [{ name: 'X', datatype: 'INT32', shape: [2], data: Int32Array.from([4, 5]) }];
  return parentTrace ? Object.assign(r, { parentTrace }) : r;
}

describe('Tracer', () => {
  let dir = '';
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'nereid-tracer-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('costs nothing while OFF, and samples every rate-th request up to count', async () => {
    const off = new Tracer();
    expect(off.active).toBe(false);
    const file = path.join(dir, 't.json');
    const tracer = new Tracer({ startup: { ...defaultTraceStartup(), level: ['TIMESTAMPS'], rate: 3, count: 2, file } });
    expect(tracer.active).toBe(true);
    const traced = Array.from({ length: 10 }, (_, i) => tracer.start(request(`r${i}`), 'm', 1) !== undefined);
    expect(traced).toEqual([false, false, true, false, false, true, false, false, false, false]);
    expect(tracer.apply('').trace_count).toBe('0');
    expect(tracer.active).toBe(false);
    await tracer.close();
  });

  it("writes Triton's records at shutdown with log_frequency 0, a child naming its parent", async () => {
    const file = path.join(dir, 't.json');
    const tracer = new Tracer({ startup: { ...defaultTraceStartup(), level: ['TIMESTAMPS', 'TENSORS'], rate: 1, file } });
    const parentRequest = request('p');
    const parent = tracer.start(parentRequest, 'ens', 1)!;
    const child = tracer.start(request('p', parentRequest.trace), 'm', 2)!;
    child.mark('REQUEST_END');
    child.release();
    parent.mark('REQUEST_END');
    parent.release();
    expect(existsSync(file)).toBe(false);
    await tracer.close();
    const records = JSON.parse(readFileSync(file, 'utf8'));
    expect(records[0]).toEqual({ id: 2, model_name: 'm', model_version: 2, request_id: 'p', parent_id: 1 });
    expect(records[1].timestamps.map((t: { name: string }) => t.name)).toEqual(['REQUEST_START', 'QUEUE_START', 'REQUEST_END']);
    expect(records[2]).toEqual({ id: 2, activity: 'TENSOR_QUEUE_INPUT', tensor: { name: 'X', data: '4,5', shape: '2', dtype: 'INT32' } });
    expect(records[3]).toEqual({ id: 1, model_name: 'ens', model_version: 1, request_id: 'p' });
  });

  it('never traces a request a model made without a traced parent (parentTrace null), nor counts it against the rate', async () => {
    const tracer = new Tracer({ startup: { ...defaultTraceStartup(), level: ['TIMESTAMPS'], rate: 2, file: path.join(dir, 't.json') } });
    const untraced = (): InferenceRequest => Object.assign(request('bls'), { parentTrace: null });
    const sampled = [
      tracer.start(request('r0'), 'm', 1),
      tracer.start(untraced(), 'm', 1),
      tracer.start(untraced(), 'm', 1),
      tracer.start(request('r1'), 'm', 1),
    ].map((t) => t !== undefined);
    // Rate 2: the second client request is sampled; the untraced ones in between take no turn.
    expect(sampled).toEqual([false, false, false, true]);
    await tracer.close();
  });

  it('rotates files every log_frequency traces, and model settings fall back to global ones', async () => {
    const tracer = new Tracer({ startup: { ...defaultTraceStartup(), level: ['TIMESTAMPS'], rate: 1, file: path.join(dir, 'g.json'), logFrequency: 2, dir } });
    expect(tracer.apply('m', { trace_rate: '2', trace_file: 'm.json' })).toMatchObject({ trace_rate: '2', trace_file: path.join(dir, 'm.json'), log_frequency: '2' });
    for (let i = 0; i < 8; i++) tracer.start(request(`r${i}`), 'm', 1)?.release();
    await tracer.close();
    const first = JSON.parse(readFileSync(path.join(dir, 'm.json.0'), 'utf8'));
    expect(first.filter((r: { model_name?: string }) => r.model_name).map((r: { request_id: string }) => r.request_id)).toEqual(['r1', 'r3']);
    expect(existsSync(path.join(dir, 'm.json.1'))).toBe(true);
    expect(existsSync(path.join(dir, 'm.json.2'))).toBe(false);
    expect(existsSync(path.join(dir, 'g.json.0'))).toBe(false);
    // null clears a model setting back to the global one.
    expect(tracer.apply('m', { trace_rate: null, trace_file: null })).toMatchObject({ trace_rate: '1', trace_file: path.join(dir, 'g.json') });
  });

  it("answers Triton's 501 for trace_file without a trace directory, and checks values", () => {
    const tracer = new Tracer();
    expect(() => tracer.apply('', { trace_file: '/tmp/x' })).toThrow('trace file location can not be updated through network protocol');
    expect(() => tracer.apply('', { trace_rate: '-1' })).toThrow("invalid value for 'trace_rate': expected a non-negative integer");
    expect(() => tracer.apply('', { trace_level: ['LOUD'] })).toThrow(InferenceError);
    expect(() => tracer.apply('', { bogus: '1' })).toThrow("unknown trace setting 'bogus'");
  });
});

describe('fileUnder', () => {
  it('keeps names inside the directory, links included', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'nereid-under-'));
    mkdirSync(path.join(dir, 'sub'));
    symlinkSync(tmpdir(), path.join(dir, 'out'));
    expect(fileUnder(dir, 'sub/a.json', 'trace_file', '--trace-dir')).toBe(path.join(dir, 'sub', 'a.json'));
    expect(fileUnder(dir, path.join(dir, 'b.json'), 'trace_file', '--trace-dir')).toBe(path.join(dir, 'b.json'));
    expect(() => fileUnder(dir, '../x', 'trace_file', '--trace-dir')).toThrow("'../x' is outside it");
    expect(() => fileUnder(dir, 'out/x', 'trace_file', '--trace-dir')).toThrow("'out/x' leads outside it");
    expect(() => fileUnder(dir, 'nope/x', 'trace_file', '--trace-dir')).toThrow('does not exist');
    expect(() => fileUnder(dir, 'sub', 'trace_file', '--trace-dir')).toThrow('is not a regular file');
    rmSync(dir, { recursive: true, force: true });
  });
});

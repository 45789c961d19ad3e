import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { InferenceError, type InferenceRequest, type InferenceResponse } from '@nereid/protocol';
import type { InferFn, ModelInstance } from '../backend';
import { PythonBackend } from './python-backend';
import { bytes, config, f32, FIXTURES, i32, loadContext, MODELS, request, run, values } from './testing';

const backend = new PythonBackend();
const io = (name: string, t = 'TYPE_FP32', dims = [4]): [string, string, number[]] => [name, t, dims];

/** A tiny core: routes BLS calls to real instances of the served models, and records them. */
function router(models: Map<string, ModelInstance>, seen: InferenceRequest[]): InferFn {
  return (req, onResponse) =>
    new Promise<InferenceResponse[]>((resolve, reject) => {
      seen.push(req);
      const target = models.get(req.modelName);
      if (!target) return reject(InferenceError.notFound(`Request for unknown model: '${req.modelName}' is not found`));
      const all: InferenceResponse[] = [];
      void target.execute([{
        request: req,
        sink: {
          send: (r, final) => {
            if (r) {
              all.push(r);
              onResponse?.(r);
            }
            if (final) resolve(all);
          },
          fail: reject,
        },
      }]);
    });
}

describe('PythonBackend: BLS and decoupled models', () => {
  const models = new Map<string, ModelInstance>();
  const seen: InferenceRequest[] = [];
  const infer = router(models, seen);
  const loaded: ModelInstance[] = [];
  const load = async (root: string, cfg: ReturnType<typeof config>, register = true): Promise<ModelInstance> => {
    const inst = await backend.loadInstance(loadContext(root, cfg, [], infer));
    loaded.push(inst);
    if (register) models.set(cfg.name ?? '', inst);
    return inst;
  };

  beforeAll(async () => {
    await Promise.all([
      load(MODELS, config('add_sub', [io('add_sub_input0'), io('add_sub_input1')], [io('added_output'), io('subbed_output')])),
      load(MODELS, config('mul', [io('mul_input0'), io('mul_input1')], [io('mul_output')])),
      load(FIXTURES, config('decoupled_repeat', [io('IN', 'TYPE_INT32', [-1])], [io('OUT', 'TYPE_INT32', [1]), io('IDX', 'TYPE_UINT32', [1])], {
        model_transaction_policy: { decoupled: true },
      })),
    ]);
  });
  afterAll(() => Promise.all(loaded.map((i) => i.unload())));

  it('streams several responses from a decoupled model, then the final flag', async () => {
    const repeat = models.get('decoupled_repeat') as ModelInstance;
    const [a, b] = await run(repeat, [request('decoupled_repeat', [i32('IN', [4, 5, 6])]), request('decoupled_repeat', [i32('IN', [7])])]);
    expect(a.responses.map((r) => values(r.outputs.find((t) => t.name === 'OUT')))).toEqual([[4], [5], [6]]);
    expect(a.responses.map((r) => values(r.outputs.find((t) => t.name === 'IDX')))).toEqual([[0], [1], [2]]);
    expect(a.finals).toBe(1);
    expect(b.responses.length).toBe(1);
  });

  it('delivers each decoupled response before the final one is produced', async () => {
    // Causality, not wall-clock gaps: the model sends nothing after its first response until we
    // create the handshake file, which we do when that first response reaches us.
    const repeat = models.get('decoupled_repeat') as ModelInstance;
    const handshake = path.join(mkdtempSync(path.join(tmpdir(), 'nereid-handshake-')), 'first-response-received');
    const received: number[] = [];
    await new Promise<void>((resolve, reject) => {
      void repeat.execute([{
        request: request('decoupled_repeat', [i32('IN', [1, 2, 3, 4, 5])], { parameters: { handshake } }),
        sink: {
          send: (r, final) => {
            if (r) received.push(values(r.outputs.find((t) => t.name === 'OUT'))[0]);
            if (r && received.length === 1) writeFileSync(handshake, '');
            if (final) resolve();
          },
          fail: reject,
        },
      }]);
    });
    expect(received).toEqual([1, 2, 3, 4, 5]);
  }, 30_000);

  it('fails a decoupled request whose model sends an error response', async () => {
    const repeat = models.get('decoupled_repeat') as ModelInstance;
    const [s] = await run(repeat, [request('decoupled_repeat', [i32('IN', [1, -3])])]);
    expect(s.responses.length).toBe(1);
    expect(s.error).toMatchObject({ code: 'INVALID_ARG', message: 'negative value -3' });
  });

  it('calls another model synchronously (request.exec) with the request metadata', async () => {
    const cfg = config('bls_sync', [io('MODEL_NAME', 'TYPE_STRING', [1]), io('INPUT0'), io('INPUT1')], [io('OUTPUT0'), io('OUTPUT1')]);
    const inst = await load(FIXTURES, cfg, false);
    const [s] = await run(inst, [request('bls_sync', [bytes('MODEL_NAME', ['add_sub']), f32('INPUT0', [1, 2, 3, 4]), f32('INPUT1', [1, 1, 1, 1])], { id: 'outer' })]);
    expect(s.error).toBeUndefined();
    expect(values(s.output('OUTPUT0'))).toEqual([2, 3, 4, 5]);
    expect(values(s.output('OUTPUT1'))).toEqual([0, 1, 2, 3]);
    const call = seen.find((r) => r.id === 'bls-outer');
    expect(call).toMatchObject({
      modelName: 'add_sub', modelVersion: -1, sequenceId: 42n, sequenceStart: true, sequenceEnd: false,
      parameters: { origin: 'bls_sync', n: 1 }, outputs: [{ name: 'added_output' }, { name: 'subbed_output' }],
    });
    const [missing] = await run(inst, [request('bls_sync', [bytes('MODEL_NAME', ['undefined_model']), f32('INPUT0', [1, 2, 3, 4]), f32('INPUT1', [1, 1, 1, 1])])]);
    expect(missing.error?.code).toBe('INTERNAL');
    expect(missing.error?.message).toContain("TritonModelException: Request for unknown model: 'undefined_model' is not found");
  });

  it('awaits two BLS calls concurrently from an async execute (async_exec)', async () => {
    const inst = await load(FIXTURES, config('bls_async', [io('INPUT0'), io('INPUT1')], [io('SUM'), io('PRODUCT')]), false);
    const sinks = await run(inst, [
      request('bls_async', [f32('INPUT0', [1, 2, 3, 4]), f32('INPUT1', [2, 2, 2, 2])]),
      request('bls_async', [f32('INPUT0', [0, 1, 0, 1]), f32('INPUT1', [5, 5, 5, 5])]),
    ]);
    expect(values(sinks[0].output('SUM'))).toEqual([3, 4, 5, 6]);
    expect(values(sinks[0].output('PRODUCT'))).toEqual([2, 4, 6, 8]);
    expect(values(sinks[1].output('PRODUCT'))).toEqual([0, 5, 0, 5]);
  });

  it.each(['sync', 'async'])('iterates the responses of a decoupled model (%s)', async (mode) => {
    const cfg = config('bls_decoupled', [io('IN', 'TYPE_INT32', [-1])], [io('SUM', 'TYPE_INT32', [1]), io('COUNT', 'TYPE_INT32', [1])]);
    const inst = await load(FIXTURES, cfg, false);
    const [s] = await run(inst, [request('bls_decoupled', [i32('IN', [1, 2, 3, 10])], { parameters: { mode } })]);
    expect(s.error).toBeUndefined();
    expect(values(s.output('SUM'))).toEqual([16]);
    expect(values(s.output('COUNT'))).toEqual([4]);
  });
});

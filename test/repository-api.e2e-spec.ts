/**
 * End-to-end: the model repository extension is one API behind both protocols. The same sequence
 * of repository requests (index, loads with config and file overrides, unloads with and without
 * `unload_dependents`, ensembles and their composing models, refused requests) runs against two
 * real servers in explicit mode, one over HTTP and one over gRPC; each answer and the repository
 * index after each step must be the same on both, and the sequence's key answers are checked
 * against Triton's words.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { call, inferenceClient, type Client } from './helpers/grpc-client';
import { makeRepository, postJson, ROOT, startTestServer } from './helpers/server';
import { ENSEMBLE_PBTXT, SIMPLE_CONFIG, SIMPLE_ONNX } from './helpers/simple-model';

type Server = Awaited<ReturnType<typeof startTestServer>>;

/** Where an absolute file override would land if it were written. */
const OUTSIDE = path.join(tmpdir(), `nereid-outside-${process.pid}.onnx`);

/** One repository request, in neither protocol's form. */
interface Step {
  op: 'index' | 'load' | 'unload' | 'infer';
  model?: string;
  repository?: string;
  ready?: boolean;
  config?: string;
  files?: Record<string, Buffer>;
  unloadDependents?: boolean;
}

/** What a step answered: `ok`, or the error's HTTP status and message. */
type Outcome = { ok: true; body?: unknown } | { ok: false; status: number; error: string };

const GRPC_TO_HTTP: Record<number, number> = {
  [grpc.status.INVALID_ARGUMENT]: 400,
  [grpc.status.NOT_FOUND]: 404,
  [grpc.status.INTERNAL]: 500,
  [grpc.status.UNIMPLEMENTED]: 501,
  [grpc.status.UNAVAILABLE]: 503,
};

const ints = Array.from({ length: 16 }, (_, i) => i);

/** Inference goes over HTTP on both servers: it checks what a load did, not the repository API. */
async function infer(server: Server, model: string): Promise<Outcome> {
  const inputs = model.startsWith('ens_') ? ['A', 'B'] : ['INPUT0', 'INPUT1'];
  const r = await postJson(`${server.http}/v2/models/${model}/infer`, {
    inputs: inputs.map((name) => ({ name, shape: [1, 16], datatype: 'INT32', data: ints })),
  });
  return r.status === 200 ? { ok: true, body: r.body.outputs[0].data.slice(0, 4) } : { ok: false, status: r.status, error: r.body.error };
}

async function overHttp(server: Server, step: Step): Promise<Outcome> {
  if (step.op === 'infer') return infer(server, step.model!);
  const repo = step.repository ? `/${step.repository}` : '';
  let r;
  if (step.op === 'index') {
    r = await postJson(`${server.http}/v2/repository${repo}/index`, step.ready === undefined ? undefined : { ready: step.ready });
  } else {
    const parameters: Record<string, unknown> = {};
    if (step.config !== undefined) parameters.config = step.config;
    for (const [k, v] of Object.entries(step.files ?? {})) parameters[k] = v.toString('base64');
    if (step.unloadDependents !== undefined) parameters.unload_dependents = step.unloadDependents;
    r = await postJson(`${server.http}/v2/repository${repo}/models/${step.model}/${step.op}`, { parameters });
  }
  if (r.status !== 200) return { ok: false, status: r.status, error: r.body.error };
  return step.op === 'index' ? { ok: true, body: r.body } : { ok: true };
}

async function overGrpc(server: Server, client: Client, step: Step): Promise<Outcome> {
  if (step.op === 'infer') return infer(server, step.model!);
  try {
    if (step.op === 'index') {
      const r = await call(client, 'RepositoryIndex', { repository_name: step.repository ?? '', ready: step.ready ?? false });
      // The JSON index leaves out what is empty; the proto has every field.
      const body = r.models.map((m: Record<string, string>) =>
        Object.fromEntries(Object.entries(m).filter(([, v]) => v !== '')),
      );
      return { ok: true, body };
    }
    const parameters: Record<string, unknown> = {};
    if (step.config !== undefined) parameters.config = { string_param: step.config };
    for (const [k, v] of Object.entries(step.files ?? {})) parameters[k] = { bytes_param: v };
    if (step.unloadDependents !== undefined) parameters.unload_dependents = { bool_param: step.unloadDependents };
    const method = step.op === 'load' ? 'RepositoryModelLoad' : 'RepositoryModelUnload';
    await call(client, method, { repository_name: step.repository ?? '', model_name: step.model, parameters });
    return { ok: true };
  } catch (e) {
    const err = e as grpc.ServiceError;
    return { ok: false, status: GRPC_TO_HTTP[err.code] ?? -err.code, error: err.details };
  }
}

/** The steps, each with what both protocols must answer (checked on the HTTP transcript). */
const SEQUENCE: { step: Step; expect?: Partial<Outcome> }[] = [
  { step: { op: 'index' }, expect: { ok: true, body: [{ name: 'ens_alt' }, { name: 'ens_ghost' }, { name: 'ens_simple' }, { name: 'simple' }] } },
  { step: { op: 'load', model: 'nope' }, expect: { ok: false, status: 400, error: "failed to load 'nope', failed to poll from model repository" } },
  { step: { op: 'load', model: 'simple', repository: 'other' }, expect: { ok: false, status: 501, error: "'repository_name' specification is not supported" } },
  // Loading an ensemble loads the model its step names first.
  { step: { op: 'load', model: 'ens_simple' }, expect: { ok: true } },
  { step: { op: 'index', ready: true } },
  { step: { op: 'infer', model: 'ens_simple' }, expect: { ok: true, body: [0, 2, 4, 6] } },
  // unload_dependents: the composing model loaded for the ensemble goes with it.
  { step: { op: 'unload', model: 'ens_simple', unloadDependents: true }, expect: { ok: true } },
  { step: { op: 'index', ready: true }, expect: { ok: true, body: [] } },
  // A model a load request named stays when the ensemble goes.
  { step: { op: 'load', model: 'simple' } },
  { step: { op: 'load', model: 'ens_simple' } },
  { step: { op: 'unload', model: 'ens_simple', unloadDependents: true } },
  { step: { op: 'index', ready: true }, expect: { ok: true, body: [{ name: 'simple', version: '1', state: 'READY' }] } },
  // Unloading a composing model takes its ensemble down; loading it again brings the ensemble back.
  { step: { op: 'load', model: 'ens_simple' } },
  { step: { op: 'unload', model: 'simple' } },
  { step: { op: 'index' } },
  { step: { op: 'infer', model: 'ens_simple' } },
  { step: { op: 'load', model: 'simple' } },
  { step: { op: 'infer', model: 'ens_simple' }, expect: { ok: true, body: [0, 2, 4, 6] } },
  // An ensemble whose step names a model the repository lacks is not loaded, with Triton's reason.
  {
    step: { op: 'load', model: 'ens_ghost' },
    expect: {
      ok: false,
      status: 400,
      error:
        "failed to load 'ens_ghost', ensemble 'ens_ghost' depends on 'ghost' which has no loaded version. Model 'ghost' loading failed with error: failed to load 'ghost', failed to poll from model repository",
    },
  },
  // The refused ensemble shows UNAVAILABLE with the dependency's reason (checked below).
  { step: { op: 'index' } },
  // Config override and file overrides: the files land in the override model's version folder.
  { step: { op: 'load', model: 'simple', config: JSON.stringify({ ...JSON.parse(SIMPLE_CONFIG), max_batch_size: 4 }) }, expect: { ok: true } },
  { step: { op: 'load', model: 'over', files: { 'file:1/model.onnx': SIMPLE_ONNX } }, expect: { ok: false, status: 400, error: "Load parameter 'config' must be specified for model file override" } },
  { step: { op: 'load', model: 'over', config: SIMPLE_CONFIG, files: { 'file:1/model.onnx': SIMPLE_ONNX } }, expect: { ok: true } },
  { step: { op: 'infer', model: 'over' }, expect: { ok: true, body: [0, 2, 4, 6] } },
  { step: { op: 'load', model: 'esc', config: SIMPLE_CONFIG, files: { 'file:../escape.onnx': SIMPLE_ONNX } }, expect: { ok: false, status: 400, error: "Invalid file parameter 'file:../escape.onnx' must stay within model directory." } },
  { step: { op: 'load', model: 'esc', config: SIMPLE_CONFIG, files: { [`file:${OUTSIDE}`]: SIMPLE_ONNX } }, expect: { ok: false, status: 400, error: `Invalid file parameter 'file:${OUTSIDE}' must stay within model directory.` } },
  // A name longer than the file system takes: Triton's words, no server path (was ENAMETOOLONG and a /tmp path).
  { step: { op: 'load', model: 'long', config: '{}', files: { [`file:${'A'.repeat(256)}`]: Buffer.from('a') } }, expect: { ok: false, status: 500, error: "failed to load 'long', failed to poll from model repository" } },
  { step: { op: 'load', model: 'long', config: '{}', files: { [`file:1/${Array.from({ length: 20 }, () => 'x'.repeat(250)).join('/')}`]: Buffer.from('a') } }, expect: { ok: false, status: 500, error: "failed to load 'long', failed to poll from model repository" } },
  { step: { op: 'unload', model: 'over' } },
  { step: { op: 'index' } },
  // ens_alt's config is configs/alt.pbtxt (--model-config-name=alt): its composing model is found
  // in the config as served, loaded for it, and unloaded with it.
  { step: { op: 'unload', model: 'ens_simple' } },
  { step: { op: 'unload', model: 'simple' } },
  { step: { op: 'load', model: 'ens_alt' }, expect: { ok: true } },
  { step: { op: 'infer', model: 'ens_alt' }, expect: { ok: true, body: [0, 2, 4, 6] } },
  { step: { op: 'unload', model: 'ens_alt', unloadDependents: true }, expect: { ok: true } },
  { step: { op: 'index', ready: true }, expect: { ok: true, body: [] } },
];

describe('repository API: the same requests over HTTP and gRPC give the same answers', () => {
  let repo: string;
  let httpServer: Server;
  let grpcServer: Server;
  let client: Client;

  beforeAll(async () => {
    repo = makeRepository({ simple: 'models/simple' });
    mkdirSync(path.join(repo, 'ens_simple', '1'), { recursive: true });
    writeFileSync(path.join(repo, 'ens_simple', 'config.pbtxt'), ENSEMBLE_PBTXT);
    mkdirSync(path.join(repo, 'ens_alt', '1'), { recursive: true });
    mkdirSync(path.join(repo, 'ens_alt', 'configs'));
    writeFileSync(path.join(repo, 'ens_alt', 'configs', 'alt.pbtxt'), ENSEMBLE_PBTXT.replace('name: "ens_simple"', 'name: "ens_alt"'));
    mkdirSync(path.join(repo, 'ens_ghost', '1'), { recursive: true });
    writeFileSync(
      path.join(repo, 'ens_ghost', 'config.pbtxt'),
      ENSEMBLE_PBTXT.replace('name: "ens_simple"', 'name: "ens_ghost"').replace('model_name: "simple"', 'model_name: "ghost"'),
    );
    const options = { modelRepositories: [repo], modelControlMode: 'explicit' as const, allowModelFileOverrides: true, modelConfigName: 'alt' };
    [httpServer, grpcServer] = await Promise.all([startTestServer(options), startTestServer(options)]);
    client = inferenceClient(grpcServer.grpcPort);
  });

  afterAll(async () => {
    client?.close();
    await Promise.all([httpServer?.close(), grpcServer?.close()]);
  });

  it('runs the sequence on both protocols with equal answers and indexes', async () => {
    const viaHttp: Outcome[] = [];
    const viaGrpc: Outcome[] = [];
    for (const { step } of SEQUENCE) {
      viaHttp.push(await overHttp(httpServer, step));
      viaGrpc.push(await overGrpc(grpcServer, client, step));
    }
    const labelled = (outcomes: Outcome[]) => outcomes.map((o, i) => ({ i, step: SEQUENCE[i].step.op, model: SEQUENCE[i].step.model, ...o }));
    expect(labelled(viaGrpc)).toEqual(labelled(viaHttp));
    SEQUENCE.forEach(({ expect: expected }, i) => {
      if (expected) expect({ i, ...viaHttp[i] }).toMatchObject({ i, ...expected });
    });
    // The ensemble went down with its composing model and came back with it.
    const afterUnload = viaHttp[14] as { ok: true; body: unknown[] };
    expect(afterUnload.body).toEqual([
      { name: 'ens_alt' },
      { name: 'ens_ghost' },
      { name: 'ens_simple', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' },
      { name: 'simple', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' },
    ]);
    expect(viaHttp[15]).toMatchObject({ ok: false });
    // An ensemble refused because a composing model failed is UNAVAILABLE with that reason, not "never loaded".
    const afterGhost = viaHttp[19] as { ok: true; body: { name: string }[] };
    expect(afterGhost.body.filter((m) => m.name === 'ens_ghost')).toEqual([
      {
        name: 'ens_ghost',
        version: '1',
        state: 'UNAVAILABLE',
        reason:
          "ensemble 'ens_ghost' depends on 'ghost' which has no loaded version. Model 'ghost' loading failed with error: failed to load 'ghost', failed to poll from model repository",
      },
    ]);
    // Nothing was written outside an override folder.
    expect(existsSync(OUTSIDE)).toBe(false);
    // No answer and no index reason shows a server path.
    expect(JSON.stringify(viaHttp)).not.toMatch(/nereid-override-|nereid-e2e-/);
  });
});

describe('repository API: --load-model of an ensemble in explicit mode', () => {
  let server: Server;

  beforeAll(async () => {
    const repo = makeRepository({ simple: 'models/simple' });
    mkdirSync(path.join(repo, 'ens_simple', '1'), { recursive: true });
    writeFileSync(path.join(repo, 'ens_simple', 'config.pbtxt'), ENSEMBLE_PBTXT);
    server = await startTestServer({ modelRepositories: [repo], modelControlMode: 'explicit', loadModels: ['ens_simple'] });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('loads its composing model for it, and unload_dependents takes that one too', async () => {
    const ready = async () => (await postJson(`${server.http}/v2/repository/index`, { ready: true })).body.map((e: { name: string }) => e.name);
    expect(await ready()).toEqual(['ens_simple', 'simple']);
    expect(await infer(server, 'ens_simple')).toEqual({ ok: true, body: [0, 2, 4, 6] });
    const unload = await postJson(`${server.http}/v2/repository/models/ens_simple/unload`, { parameters: { unload_dependents: true } });
    expect(unload.status).toBe(200);
    expect(await ready()).toEqual([]);
  });
});

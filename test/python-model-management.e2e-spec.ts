/**
 * End-to-end: a python model manages models as in Triton's python backend
 * (`pb_utils.load_model`, `unload_model`, `is_model_ready`), through the same repository API and
 * lifecycle as a client's requests: real server, real python stub, real ONNX models. Explicit
 * mode only (Triton's words elsewhere); a model loaded at start-up is refused ("Server not
 * ready"); config and file overrides; ensembles bring their composing models.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { getJson, makeRepository, postJson, ROOT, startTestServer } from './helpers/server';
import { ENSEMBLE_PBTXT, SIMPLE_CONFIG, SIMPLE_ONNX } from './helpers/simple-model';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const FIXTURE = path.join(ROOT, 'test/fixtures/python/model_manager');

/** Asks `manager` (a model_manager instance) to act; resolves with its RESULT text. */
async function ask(server: Server, manager: string, action: string, model: string, arg = ''): Promise<string> {
  const text = (name: string, value: string) => ({ name, shape: [1], datatype: 'BYTES', data: [value] });
  const r = await postJson(`${server.http}/v2/models/${manager}/infer`, {
    inputs: [text('ACTION', action), text('MODEL', model), text('ARG', arg)],
  });
  if (r.status !== 200) throw new Error(`${manager} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body.outputs[0].data[0];
}

const readyStatus = async (server: Server, model: string) => (await getJson(`${server.http}/v2/models/${model}/ready`)).status;

const ints = Array.from({ length: 16 }, (_, i) => i);
async function inferSum(server: Server, model: string, inputs: [string, string]): Promise<number[] | string> {
  const r = await postJson(`${server.http}/v2/models/${model}/infer`, {
    inputs: inputs.map((name) => ({ name, shape: [1, 16], datatype: 'INT32', data: ints })),
  });
  return r.status === 200 ? r.body.outputs[0].data.slice(0, 4) : `${r.status}: ${r.body.error}`;
}

describe('python models manage models (pb_utils.load_model & co.)', () => {
  let repo: string;
  let server: Server;

  beforeAll(async () => {
    repo = makeRepository({ model_manager: FIXTURE, startup_manager: FIXTURE, init_manager: FIXTURE, simple: 'models/simple' });
    // startup_manager (loaded at start-up) and init_manager (loaded later) load a model from initialize.
    for (const [name, target] of [['startup_manager', 'simple'], ['init_manager', 'py_from_init']]) {
      const config = path.join(repo, name, 'config.pbtxt');
      writeFileSync(
        config,
        readFileSync(config, 'utf8').replace('name: "model_manager"', `name: "${name}"`) +
          `parameters { key: "load_in_initialize" value: { string_value: "${target}" } }\n`,
      );
    }
    cpSync(path.join(ROOT, 'models/simple'), path.join(repo, 'py_from_init'), { recursive: true });
    writeFileSync(path.join(repo, 'py_from_init', 'config.pbtxt'), readFileSync(path.join(repo, 'simple', 'config.pbtxt'), 'utf8').replace('"simple"', '"py_from_init"'));
    mkdirSync(path.join(repo, 'ens_simple', '1'), { recursive: true });
    writeFileSync(path.join(repo, 'ens_simple', 'config.pbtxt'), ENSEMBLE_PBTXT);
    server = await startTestServer({
      modelRepositories: [repo],
      modelControlMode: 'explicit',
      loadModels: ['startup_manager'],
      allowModelFileOverrides: true,
    });
    expect((await postJson(`${server.http}/v2/repository/models/model_manager/load`)).status).toBe(200);
  });

  afterAll(async () => {
    await server?.close();
  });

  it('refuses a model loaded at start-up, as Triton does before the server is ready', async () => {
    expect(await ask(server, 'startup_manager', 'init', '')).toBe('error: Failed to load model: Server not ready');
    expect(await readyStatus(server, 'simple')).not.toBe(200);
  });

  it("loads a model from initialize once the server has started (Triton's python backend QA pattern)", async () => {
    expect((await postJson(`${server.http}/v2/repository/models/init_manager/load`)).status).toBe(200);
    expect(await ask(server, 'init_manager', 'init', '')).toBe('ok');
    expect(await readyStatus(server, 'py_from_init')).toBe(200);
  });

  it('loads, checks and unloads a model', async () => {
    // A model never loaded is unknown to the server (Triton raises the same, its QA accepts either).
    expect(await ask(server, 'model_manager', 'ready', 'simple')).toBe(
      "error: Failed to check model readiness: Request for unknown model: 'simple' is not found",
    );
    expect(await ask(server, 'model_manager', 'load', 'simple')).toBe('ok');
    expect(await readyStatus(server, 'simple')).toBe(200);
    expect(await ask(server, 'model_manager', 'ready', 'simple')).toBe('True');
    expect(await ask(server, 'model_manager', 'ready', 'simple', '1')).toBe('True');
    expect(await ask(server, 'model_manager', 'ready', 'simple', 'x')).toBe(
      "error: Failed to check model readiness: failed to get model version from specified version string 'x' (details: stol), version should be an integral value > 0",
    );
    expect(await inferSum(server, 'simple', ['INPUT0', 'INPUT1'])).toEqual([0, 2, 4, 6]);
    expect(await ask(server, 'model_manager', 'unload', 'simple')).toBe('ok');
    expect(await readyStatus(server, 'simple')).not.toBe(200);
    expect(await ask(server, 'model_manager', 'ready', 'simple')).toBe('False');
    const index = await postJson(`${server.http}/v2/repository/index`, {});
    expect(index.body).toContainEqual({ name: 'simple', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' });
  });

  it('loads with config and file overrides', async () => {
    const arg = JSON.stringify({ config: SIMPLE_CONFIG, files: { 'file:1/model.onnx': SIMPLE_ONNX.toString('base64') } });
    expect(await ask(server, 'model_manager', 'load', 'py_override', arg)).toBe('ok');
    expect(await inferSum(server, 'py_override', ['INPUT0', 'INPUT1'])).toEqual([0, 2, 4, 6]);
    const noConfig = JSON.stringify({ files: { 'file:1/model.onnx': SIMPLE_ONNX.toString('base64') } });
    expect(await ask(server, 'model_manager', 'load', 'py_override2', noConfig)).toBe(
      "error: Failed to load model: Load parameter 'config' must be specified for model file override",
    );
    const escape = JSON.stringify({ config: SIMPLE_CONFIG, files: { 'file:../x.onnx': 'eA==' } });
    expect(await ask(server, 'model_manager', 'load', 'py_override3', escape)).toBe(
      "error: Failed to load model: Invalid file parameter 'file:../x.onnx' must stay within model directory.",
    );
    expect(await ask(server, 'model_manager', 'unload', 'py_override')).toBe('ok');
  });

  it("answers failures in Triton's words", async () => {
    expect(await ask(server, 'model_manager', 'load', 'nope')).toBe(
      "error: Failed to load model: failed to load 'nope', failed to poll from model repository",
    );
    expect(await ask(server, 'model_manager', 'unload', 'model_manager')).toBe(
      "error: Failed to unload model: model 'model_manager' cannot load or unload itself",
    );
  });

  it('loads an ensemble with its composing model, and unloads both with unload_dependents', async () => {
    expect(await ask(server, 'model_manager', 'load', 'ens_simple')).toBe('ok');
    expect(await ask(server, 'model_manager', 'ready', 'simple')).toBe('True');
    expect(await inferSum(server, 'ens_simple', ['A', 'B'])).toEqual([0, 2, 4, 6]);
    expect(await ask(server, 'model_manager', 'unload_dependents', 'ens_simple')).toBe('ok');
    expect(await ask(server, 'model_manager', 'ready', 'ens_simple')).toBe('False');
    expect(await ask(server, 'model_manager', 'ready', 'simple')).toBe('False');
  });
});

describe('python model management outside explicit mode', () => {
  let server: Server;

  beforeAll(async () => {
    server = await startTestServer({ modelRepositories: [makeRepository({ model_manager: FIXTURE, simple: 'models/simple' })] });
  });

  afterAll(async () => {
    await server?.close();
  });

  it("is refused in Triton's words", async () => {
    expect(await ask(server, 'model_manager', 'unload', 'simple')).toBe(
      'error: Failed to unload model: explicit model load / unload is not allowed if polling is enabled',
    );
    expect(await ask(server, 'model_manager', 'ready', 'simple')).toBe('True');
  });
});

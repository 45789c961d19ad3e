/**
 * End-to-end: what a client could do to the server's files and logs through the repository API,
 * config overrides and client-chosen names, over HTTP and gRPC, against a real server in explicit
 * mode. Each attack is made as a client would make it, and its effect looked for on disk.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { call, callError, inferenceClient, type Client, type Msg } from './helpers/grpc-client';
import { getJson, makeRepository, postJson, ROOT, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const MODEL_ONNX = readFileSync(path.join(ROOT, 'models/simple/1/model.onnx'));

/** The `simple` model's config as a load request's `config` override, with changes. */
function simpleConfig(changes: Record<string, unknown> = {}, outputChanges: Record<string, unknown> = {}): string {
  const tensor = (name: string) => ({ name, data_type: 'TYPE_INT32', dims: [16] });
  return JSON.stringify({
    backend: 'onnxruntime',
    max_batch_size: 8,
    input: [tensor('INPUT0'), tensor('INPUT1')],
    output: [{ ...tensor('OUTPUT0'), ...outputChanges }, tensor('OUTPUT1')],
    ...changes,
  });
}

const inferBody = (outputs?: unknown[]) => ({
  inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, (_, i) => i) })),
  ...(outputs ? { outputs } : {}),
});

const base64 = (b: Uint8Array | string) => Buffer.from(b).toString('base64');

/** Override folders holding a model folder `name` (other test files may load overrides too). */
function overrideFoldersOf(name: string): string[] {
  return readdirSync(tmpdir()).filter((d) => d.startsWith('nereid-override-') && existsSync(path.join(tmpdir(), d, name)));
}

describe('security: what clients can reach through the repository API and names', () => {
  let server: Server;
  let client: Client;
  let repo: string;
  let outside: string;
  let logFile: string;

  beforeAll(async () => {
    repo = makeRepository({ simple: 'models/simple', add_sub: 'models/add_sub' });
    outside = mkdtempSync(path.join(tmpdir(), 'nereid-outside-'));
    mkdirSync(path.join(outside, 'victim'));
    writeFileSync(path.join(outside, 'secret.txt'), 'top-secret-line-0\ntop-secret-line-1\n');
    symlinkSync(path.join(outside, 'secret.txt'), path.join(repo, 'simple', 'linked-labels.txt'));
    logFile = path.join(mkdtempSync(path.join(tmpdir(), 'nereid-log-')), 'server.log');
    server = await startTestServer({
      modelRepositories: [repo],
      modelControlMode: 'explicit',
      loadModels: ['simple'],
      // The file-override cases below need them allowed (off by default).
      allowModelFileOverrides: true,
      logFile,
      logInfo: true,
      logError: true,
    });
    client = inferenceClient(server.grpcPort);
  });

  afterAll(async () => {
    client?.close();
    await server?.close();
    for (const dir of [repo, outside, path.dirname(logFile)]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  describe('model names are one path segment (13)', () => {
    const traversal = () => `${'../'.repeat(12)}${outside.slice(1)}/victim`;

    it('a load over HTTP naming a folder outside the repository writes nothing there', async () => {
      const name = traversal();
      const r = await postJson(`${server.http}/v2/repository/models/${encodeURIComponent(name)}/load`, {
        parameters: { config: simpleConfig(), 'file:target.txt': base64('written by a client') },
      });
      expect(readdirSync(outside).sort()).toEqual(['secret.txt', 'victim']);
      expect(readdirSync(path.join(outside, 'victim'))).toEqual([]);
      expect(r.status).toBe(400);
      expect(r.body.error).toBe(`invalid model name '${name}', model name must not contain path traversal characters`);
    });

    it('so does a load over gRPC', async () => {
      const name = traversal();
      const err = await callError(client, 'RepositoryModelLoad', {
        model_name: name,
        parameters: { config: { string_param: simpleConfig() }, 'file:target.txt': { bytes_param: Buffer.from('x') } },
      });
      expect(readdirSync(outside).sort()).toEqual(['secret.txt', 'victim']);
      expect(readdirSync(path.join(outside, 'victim'))).toEqual([]);
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toBe(`invalid model name '${name}', model name must not contain path traversal characters`);
    });

    it('every HTTP entry point refuses names that are not one segment', async () => {
      const bad = encodeURIComponent('../simple');
      const expected = "invalid model name '../simple', model name must not contain path traversal characters";
      for (const url of [`models/${bad}`, `models/${bad}/versions/1`, `models/${bad}/config`, `models/${bad}/stats`]) {
        const r = await getJson(`${server.http}/v2/${url}`);
        expect({ url, status: r.status, body: r.body }).toEqual({ url, status: 400, body: { error: expected } });
      }
      for (const url of [`models/${bad}/infer`, `repository/models/${bad}/unload`]) {
        const r = await postJson(`${server.http}/v2/${url}`, url.endsWith('infer') ? inferBody() : undefined);
        expect({ url, status: r.status, body: r.body }).toEqual({ url, status: 400, body: { error: expected } });
      }
      expect((await getJson(`${server.http}/v2/models/${bad}/ready`)).status).toBe(400);
      const control = await postJson(`${server.http}/v2/repository/models/${encodeURIComponent('bad\nname')}/load`);
      expect(control).toMatchObject({ status: 400, body: { error: "invalid model name 'bad\\nname', model name must not contain control characters" } });
      const empty = await postJson(`${server.http}/v2/repository/models/${encodeURIComponent(' ')}/load`);
      expect(empty).toMatchObject({ status: 400, body: { error: 'Model name cannot be empty. Please enter a valid name to deploy.' } });
    });

    it('and so does every gRPC one', async () => {
      const expected = "invalid model name '..', model name must not contain path traversal characters";
      for (const [method, request] of [
        ['ModelMetadata', { name: '..' }],
        ['ModelConfig', { name: '..' }],
        ['ModelStatistics', { name: '..' }],
        ['ModelInfer', { model_name: '..', inputs: [] }],
        ['RepositoryModelUnload', { model_name: '..' }],
      ] as const) {
        const err = await callError(client, method, request);
        expect({ method, code: err.code, details: err.details }).toEqual({ method, code: grpc.status.INVALID_ARGUMENT, details: expected });
      }
    });
  });

  describe('files a config names stay inside the model folder (14)', () => {
    it('a label file outside the model folder is refused and never read', async () => {
      const up = '../../../../../../etc/passwd';
      for (const labels of [up, 'linked-labels.txt', '/etc/passwd']) {
        const r = await postJson(`${server.http}/v2/repository/models/simple/load`, {
          parameters: { config: simpleConfig({}, { label_filename: labels }) },
        });
        expect(r.status).toBe(400);
        expect(r.body.error).toMatch(new RegExp(`^failed to load 'simple', label file path '${labels}' for output 'OUTPUT0' in model 'simple' (is outside model directory|must be a relative path inside the model directory)$`));
      }
      // The version loaded at start-up still serves, without labels.
      const inf = await postJson(`${server.http}/v2/models/simple/infer`, inferBody([{ name: 'OUTPUT0', parameters: { classification: 16 } }]));
      expect(inf.status).toBe(200);
      const text = JSON.stringify(inf.body);
      expect(text).not.toMatch(/root|top-secret/);
    });

    it('a model file or execution environment outside the model folder is refused', async () => {
      const file = await postJson(`${server.http}/v2/repository/models/simple/load`, {
        parameters: { config: simpleConfig({ default_model_filename: '../../../../../../etc/passwd' }) },
      });
      expect(file).toMatchObject({
        status: 400,
        body: { error: "failed to load 'simple', model file name '../../../../../../etc/passwd' of model 'simple' is outside model directory" },
      });
      const env = await postJson(`${server.http}/v2/repository/models/add_sub/load`, {
        parameters: { config: JSON.stringify({ backend: 'python', parameters: { EXECUTION_ENV_PATH: { string_value: '/usr' } } }) },
      });
      expect(env.status).toBe(400);
      expect(env.body.error).toBe(
        "failed to load 'add_sub', EXECUTION_ENV_PATH '/usr' of model 'add_sub' must name a path inside the model directory (relative, or starting with $$TRITON_MODEL_DIRECTORY)",
      );
    });
  });

  describe('override folders (15)', () => {
    const labelled = (labels: string) => ({
      parameters: {
        config: simpleConfig({}, { label_filename: 'labels.txt' }),
        'file:1/model.onnx': base64(MODEL_ONNX),
        'file:labels.txt': base64(labels),
      },
    });

    it('hold a loaded model, are replaced on reload and deleted on unload', async () => {
      const labels = (prefix: string) => Array.from({ length: 16 }, (_, i) => `${prefix}${i}`).join('\n');
      const load = await postJson(`${server.http}/v2/repository/models/labelled/load`, labelled(labels('first')));
      expect(load.status).toBe(200);
      const first = overrideFoldersOf('labelled');
      expect(first).toHaveLength(1);
      const inf = await postJson(`${server.http}/v2/models/labelled/infer`, inferBody([{ name: 'OUTPUT0', parameters: { classification: 3 } }]));
      expect(inf.status).toBe(200);
      expect(inf.body.outputs[0].data).toEqual(['30:15:first15', '28:14:first14', '26:13:first13']);

      expect((await postJson(`${server.http}/v2/repository/models/labelled/load`, labelled(labels('second')))).status).toBe(200);
      const second = overrideFoldersOf('labelled');
      expect(second).toHaveLength(1);
      expect(second[0]).not.toBe(first[0]);
      const again = await postJson(`${server.http}/v2/models/labelled/infer`, inferBody([{ name: 'OUTPUT0', parameters: { classification: 1 } }]));
      expect(again.body.outputs[0].data).toEqual(['30:15:second15']);

      expect((await postJson(`${server.http}/v2/repository/models/labelled/unload`)).status).toBe(200);
      expect(overrideFoldersOf('labelled')).toEqual([]);
    });

    it('are deleted when the load fails, and errors never show their path', async () => {
      const badConfig = await postJson(`${server.http}/v2/repository/models/broken/load`, {
        parameters: { config: '{"nonsense_field": 1}', 'file:1/model.onnx': base64(MODEL_ONNX) },
      });
      expect(badConfig.status).toBe(400);
      const badModel = await postJson(`${server.http}/v2/repository/models/broken/load`, {
        parameters: { config: simpleConfig(), 'file:1/model.onnx': base64('not an onnx model') },
      });
      expect(badModel.status).toBe(400);
      expect(badModel.body.error).toMatch(/^failed to load 'broken', version 1: /);
      expect(badModel.body.error).not.toContain(tmpdir());
      const index = await postJson(`${server.http}/v2/repository/index`, {});
      expect(JSON.stringify(index.body)).not.toContain(tmpdir());
      expect(overrideFoldersOf('broken')).toEqual([]);
    });

    it('file parameters must name files inside the model folder', async () => {
      const before = readdirSync(tmpdir()).filter((d) => d.startsWith('nereid-override-')).length;
      for (const [key, why] of [
        ['file:1/', "must name a file of the model directory: 'file:<version>/<path>'"],
        ['file:../escape.txt', 'must stay within model directory.'],
        ['file:/etc/cron.d/x', 'must stay within model directory.'],
      ]) {
        const r = await postJson(`${server.http}/v2/repository/models/files/load`, { parameters: { config: simpleConfig(), [key]: base64('x') } });
        expect({ key, status: r.status, body: r.body }).toEqual({ key, status: 400, body: { error: `Invalid file parameter '${key}' ${why}` } });
      }
      expect(overrideFoldersOf('files')).toEqual([]);
      expect(readdirSync(tmpdir()).filter((d) => d.startsWith('nereid-override-')).length).toBeLessThanOrEqual(before);
    });

    it('work over gRPC, need a config, and go with the model', async () => {
      const noConfig = await callError(client, 'RepositoryModelLoad', {
        model_name: 'grpc_override',
        parameters: { 'file:1/model.onnx': { bytes_param: MODEL_ONNX } },
      });
      expect(noConfig.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(noConfig.details).toBe("Load parameter 'config' must be specified for model file override");
      await call(client, 'RepositoryModelLoad', {
        model_name: 'grpc_override',
        parameters: { config: { string_param: simpleConfig() }, 'file:1/model.onnx': { bytes_param: MODEL_ONNX } },
      });
      expect(overrideFoldersOf('grpc_override')).toHaveLength(1);
      expect((await postJson(`${server.http}/v2/models/grpc_override/infer`, inferBody())).status).toBe(200);
      await call(client, 'RepositoryModelUnload', { model_name: 'grpc_override' });
      expect(overrideFoldersOf('grpc_override')).toEqual([]);
    });
  });

  describe('the log (16)', () => {
    it('holds client text escaped, one line per entry', async () => {
      const forged = 'I0101 00:00:00.000000 1 nereid] successfully loaded';
      const r = await postJson(`${server.http}/v2/repository/models/simple/load`, {
        parameters: { config: JSON.stringify({ [`x\n${forged} 'admin'`]: 1 }) },
      });
      expect(r.status).toBe(400);
      let log = '';
      for (let i = 0; i < 100 && !log.includes('\\nI0101'); i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        log = readFileSync(logFile, 'utf8');
      }
      expect(log).toContain(`x\\n${forged} 'admin'`);
      expect(log.split('\n').filter((line) => line.startsWith(forged))).toEqual([]);
    });
  });

  describe('client keys (17)', () => {
    const keys = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'];

    it('request parameters named like Object.prototype members are plain custom parameters', async () => {
      const wire: Msg = {};
      for (const k of keys) Object.defineProperty(wire, k, { value: { string_param: k }, enumerable: true });
      const res = await call(client, 'ModelInfer', {
        model_name: 'simple',
        parameters: wire,
        inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16] })),
        raw_input_contents: [Buffer.alloc(64), Buffer.alloc(64)],
      });
      expect(res.outputs.map((o: Msg) => o.name)).toEqual(['OUTPUT0', 'OUTPUT1']);
      const http = await postJson(`${server.http}/v2/models/simple/infer`, `{"parameters":${JSON.stringify(Object.fromEntries(keys.map((k) => [k, k])))},"inputs":${JSON.stringify(inferBody().inputs)}}`);
      expect(http.status).toBe(200);
    });

    it('load parameters: unknown keys and non-string values are refused in Triton words', async () => {
      const wrongType = await postJson(`${server.http}/v2/repository/models/simple/load`, { parameters: { config: 5 } });
      expect(wrongType).toMatchObject({ status: 400, body: { error: "invalid value type for load parameter 'config', expected a string." } });
      const proto = await postJson(`${server.http}/v2/repository/models/simple/load`, '{"parameters":{"__proto__":{"config":"{}"}}}');
      expect(proto).toMatchObject({ status: 400, body: { error: "invalid value type for load parameter '__proto__', expected a string." } });
      const unknown = await postJson(`${server.http}/v2/repository/models/simple/load`, { parameters: { toString: 'x' } });
      expect(unknown).toMatchObject({ status: 500, body: { error: 'unexpected error on creating Triton parameter' } });
      const grpcUnknown = await callError(client, 'RepositoryModelLoad', {
        model_name: 'simple',
        parameters: { constructor: { string_param: 'x' } },
      });
      expect(grpcUnknown.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(grpcUnknown.details).toBe("unrecognized load parameter 'constructor'.");
    });

    it('every HTTP response says nosniff, errors that echo markup included', async () => {
      const markup = encodeURIComponent('<script>alert(1)</script>');
      const responses = [
        await fetch(`${server.http}/v2/models/${markup}`),
        await fetch(`${server.http}/v2/models/${markup}/infer`, { method: 'POST', body: JSON.stringify(inferBody()) }),
        await fetch(`${server.http}/v2/models/simple/infer`, { method: 'POST', body: JSON.stringify(inferBody()) }),
        await fetch(`${server.http}/v2`),
        await fetch(`${server.http}/v2/no/such/route`),
      ];
      expect(responses.map((r) => r.status)).toEqual([400, 400, 200, 200, 404]);
      expect(responses.map((r) => r.headers.get('x-content-type-options'))).toEqual(Array(5).fill('nosniff'));
      expect(await responses[0].text()).toContain('<script>');
    });
  });
});

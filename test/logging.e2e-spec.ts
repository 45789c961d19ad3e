/**
 * End-to-end: the logging extension changes the running server's log. A real server logs to a
 * file under --log-dir with --access-log; each test changes a setting over HTTP `/v2/logging` or
 * gRPC LogSettings and reads the file: info and error lines switched off and on, verbose request
 * lines with the request id (the client's or an assigned one), ISO8601 and JSON formats, another
 * file inside --log-dir (one outside refused), one access-log line per HTTP and gRPC request, and
 * an update with one bad key changing nothing.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { call, callError, inferenceClient, type Client, type Msg } from './helpers/grpc-client';
import { getJson, makeRepository, MODELS, postJson, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const simpleBody = (id?: string) => ({
  ...(id === undefined ? {} : { id }),
  inputs: [
    { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(2) },
    { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(1) },
  ],
});

function linesOf(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l !== '') : [];
}

/** Waits until a line of `file` matches; returns it. */
async function lineMatching(file: string, re: RegExp): Promise<string> {
  for (let i = 0; i < 200; i++) {
    const hit = linesOf(file).find((l) => re.test(l));
    if (hit !== undefined) return hit;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no line of ${file} matches ${re}:\n${linesOf(file).slice(-10).join('\n')}`);
}

describe('logging extension at run time', () => {
  let server: Server;
  let client: Client;
  let dir = '';
  let logFile = '';
  let repo = '';

  const setLog = (update: Record<string, unknown>) => postJson(`${server.http}/v2/logging`, update);
  const infer = (id?: string) => postJson(`${server.http}/v2/models/simple/infer`, simpleBody(id));
  /** A line written after every earlier one: the access line of a request with this id. */
  const marker = async (id: string): Promise<void> => {
    expect((await infer(id)).status).toBe(200);
    await lineMatching(logFile, new RegExp(`id=${id}\\b|"request_id":"${id}"`));
  };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'nereid-logs-'));
    logFile = path.join(dir, 'server.log');
    repo = makeRepository({ simple: path.join(MODELS, 'simple') });
    // A model whose load fails: an error line each time it is asked for.
    mkdirSync(path.join(repo, 'broken', '1'), { recursive: true });
    writeFileSync(path.join(repo, 'broken', 'config.pbtxt'), 'name: "broken"\nbackend: "onnxruntime"\nmax_batch_size: 0\n');
    server = await startTestServer({
      modelRepositories: [repo],
      modelControlMode: 'explicit',
      loadModels: ['simple'],
      logFile,
      logDir: dir,
      accessLog: true,
      logInfo: true,
      logWarning: true,
      logError: true,
    });
    client = inferenceClient(server.grpcPort);
  }, 60_000);
  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it('log_info and log_error switch their lines off and on', async () => {
    await lineMatching(logFile, /^I\d{4} .* nereid\] successfully loaded 'simple' version 1$/);
    const loaded = () => linesOf(logFile).filter((l) => /successfully (un)?loaded 'simple'/.test(l)).length;
    const reload = async () => {
      expect((await postJson(`${server.http}/v2/repository/models/simple/unload`)).status).toBe(200);
      expect((await postJson(`${server.http}/v2/repository/models/simple/load`)).status).toBe(200);
    };
    const failed = () => linesOf(logFile).filter((l) => l.includes("failed to load 'broken'")).length;
    expect(failed()).toBe(0);
    expect((await postJson(`${server.http}/v2/repository/models/broken/load`)).status).toBe(400);
    await lineMatching(logFile, /^E\d{4} .* nereid\] failed to load 'broken'/);

    expect((await setLog({ log_info: false, log_error: false })).body).toMatchObject({ log_info: false, log_error: false });
    const [loadedBefore, failedBefore] = [loaded(), failed()];
    await reload();
    expect((await postJson(`${server.http}/v2/repository/models/broken/load`)).status).toBe(400);
    await setLog({ log_info: true, log_error: true });
    await marker('after-quiet');
    expect([loaded(), failed()]).toEqual([loadedBefore, failedBefore]);

    await reload();
    await marker('after-loud');
    expect(loaded()).toBe(loadedBefore + 2);
  });

  it('log_warning switches its lines off and on', async () => {
    const model = path.join(repo, 'simple', '1', 'model.onnx');
    const good = readFileSync(model);
    const line = /^W\d{4} .* nereid\] version 1 of 'simple' keeps serving: its reload failed$/;
    const warned = () => linesOf(logFile).filter((l) => line.test(l)).length;
    // A reload whose new model file is broken: the loaded version keeps serving, with a warning.
    writeFileSync(model, 'not an onnx model');
    try {
      expect((await postJson(`${server.http}/v2/repository/models/simple/load`)).status).toBe(400);
      await lineMatching(logFile, line);
      const before = warned();
      await setLog({ log_warning: false });
      writeFileSync(model, 'still not an onnx model');
      expect((await postJson(`${server.http}/v2/repository/models/simple/load`)).status).toBe(400);
      await setLog({ log_warning: true });
      await marker('after-warn');
      expect(warned()).toBe(before);
    } finally {
      writeFileSync(model, good);
    }
    expect((await postJson(`${server.http}/v2/repository/models/simple/load`)).status).toBe(200);
  });

  it('log_verbose_level (set over gRPC) adds a line per request carrying its id', async () => {
    await call(client, 'LogSettings', { settings: { log_verbose_level: { uint32_param: 1 } } });
    await infer('verbose-1');
    await lineMatching(logFile, /^I\d{4} .* nereid\] \[request id: verbose-1\] HTTP infer request for model 'simple'$/);
    // No id from the client: one is assigned, and the access line names the same.
    await infer();
    const assigned = await lineMatching(logFile, /\[request id: nereid-\d+\] HTTP infer request/);
    const id = /nereid-\d+/.exec(assigned)![0];
    await lineMatching(logFile, new RegExp(`access HTTP POST /v2/models/simple/infer 200 .* model=simple id=${id}$`));
    // A failing request's error carries the id too.
    const bad = await postJson(`${server.http}/v2/models/simple/infer`, { id: 'verbose-bad', inputs: [] });
    expect(bad.status).toBe(400);
    await lineMatching(logFile, /\[request id: verbose-bad\] infer failed: /);
    // gRPC requests too, unary and streamed.
    const grpcRequest = (id: string) => ({
      id,
      model_name: 'simple',
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
      ],
      raw_input_contents: [Buffer.alloc(64), Buffer.alloc(64)],
    });
    await call(client, 'ModelInfer', grpcRequest('verbose-grpc'));
    await lineMatching(logFile, /\[request id: verbose-grpc\] GRPC infer request for model 'simple'$/);
    const stream = client.ModelStreamInfer();
    const ended = new Promise((resolve) => stream.on('end', resolve));
    stream.on('data', () => undefined);
    // One input of two: decoded, then refused by the model's config.
    stream.write({ ...grpcRequest('verbose-stream'), inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }], raw_input_contents: [Buffer.alloc(64)] });
    stream.end();
    await ended;
    await lineMatching(logFile, /\[request id: verbose-stream\] GRPC infer request for model 'simple'$/);
    await lineMatching(logFile, /\[request id: verbose-stream\] infer failed: /);
    await call(client, 'LogSettings', { settings: { log_verbose_level: { uint32_param: 0 } } });
    await infer('quiet-1');
    await marker('quiet-2');
    expect(linesOf(logFile).some((l) => l.includes('[request id: quiet-1]'))).toBe(false);
  });

  it('writes one access line per HTTP and gRPC request: method, target, status, duration, client, model, id', async () => {
    await infer('acc-1');
    const line = await lineMatching(logFile, /access HTTP POST \/v2\/models\/simple\/infer .* id=acc-1$/);
    expect(line).toMatch(/^I\d{4} .* nereid\] access HTTP POST \/v2\/models\/simple\/infer 200 \d+\.\d{3}ms client=127\.0\.0\.1:\d+ model=simple id=acc-1$/);
    await getJson(`${server.http}/v2/models/nope`);
    await lineMatching(logFile, /access HTTP GET \/v2\/models\/nope 400 .* model=nope id=-$/);
    await call(client, 'ModelInfer', {
      id: 'grpc-1',
      model_name: 'simple',
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
      ],
      raw_input_contents: [Buffer.alloc(64), Buffer.alloc(64)],
    });
    await lineMatching(logFile, /access GRPC RPC \/inference\.GRPCInferenceService\/ModelInfer 0 \d+\.\d{3}ms client=.*127\.0\.0\.1:\d+ model=simple id=grpc-1$/);
    // A gRPC request without an id: its line names the id assigned to it, as HTTP's does.
    const before = linesOf(logFile).length;
    await call(client, 'ModelInfer', {
      model_name: 'simple',
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
      ],
      raw_input_contents: [Buffer.alloc(64), Buffer.alloc(64)],
    });
    await marker('acc-2');
    const grpcLine = linesOf(logFile).slice(before).find((l) => l.includes('access GRPC RPC /inference.GRPCInferenceService/ModelInfer'));
    expect(grpcLine).toMatch(/ model=simple id=nereid-\d+$/);
  });

  it('log_format ISO8601 and json change the next lines', async () => {
    await setLog({ log_format: 'ISO8601' });
    await marker('iso-1');
    expect(await lineMatching(logFile, /id=iso-1$/)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ I \d+ nereid\] access HTTP POST/);
    await setLog({ log_format: 'json', log_verbose_level: 1 });
    await infer('json-1');
    const verbose = JSON.parse(await lineMatching(logFile, /"request_id":"json-1".*HTTP infer request|HTTP infer request.*"request_id":"json-1"/)) as Msg;
    expect(verbose).toMatchObject({ level: 'VERBOSE', message: "HTTP infer request for model 'simple'", request_id: 'json-1', pid: process.pid });
    const access = JSON.parse(await lineMatching(logFile, /"access":true.*"request_id":"json-1"/)) as Msg;
    expect(access).toMatchObject({ level: 'INFO', access: true, protocol: 'HTTP', method: 'POST', target: '/v2/models/simple/infer', status: 200, model: 'simple', request_id: 'json-1' });
    expect(typeof access.duration_ms).toBe('number');
    const bad = await setLog({ log_format: 'yaml' });
    expect(bad.status).toBe(503);
    expect(bad.body.error).toBe('invalid argument for --log_format, got: yaml');
    await setLog({ log_format: 'default', log_verbose_level: 0 });
  });

  it('an update with one bad key changes nothing (HTTP and gRPC): every key is checked before any is applied', async () => {
    const before = (await getJson(`${server.http}/v2/logging`)).body;
    expect(before).toMatchObject({ log_format: 'default', log_verbose_level: 0, log_info: true });
    // A good log_format and log_info before a bad key (checked later): neither applied.
    const http = await setLog({ log_format: 'ISO8601', log_info: false, log_verbose_level: -1 });
    expect(http.status).toBe(400);
    expect(http.body.error).toBe("expect unsigned integer for 'log_verbose_level'");
    expect((await getJson(`${server.http}/v2/logging`)).body).toEqual(before);
    const file = await setLog({ log_file: 'elsewhere.log', log_format: 'yaml' });
    expect(file.status).toBe(503);
    expect((await getJson(`${server.http}/v2/logging`)).body).toEqual(before);
    const grpcError = await callError(client, 'LogSettings', {
      settings: { log_verbose_level: { uint32_param: 1 }, log_warning: { bool_param: false }, log_format: { string_param: 'yaml' } },
    });
    expect(grpcError.details).toBe('invalid argument for --log_format, got: yaml');
    expect((await getJson(`${server.http}/v2/logging`)).body).toEqual(before);
    // Still the default format and file: the next line says so.
    await marker('atomic-1');
    expect(await lineMatching(logFile, /id=atomic-1$/)).toMatch(/^I\d{4} .* nereid\] access HTTP POST/);
  });

  it('log_file moves the log to another file under --log-dir, and refuses one outside it', async () => {
    const other = path.join(dir, 'other.log');
    const moved = await setLog({ log_file: 'other.log' });
    expect(moved.body.log_file).toBe(other);
    await infer('moved-1');
    await lineMatching(other, /id=moved-1$/);
    expect(linesOf(logFile).some((l) => l.includes('moved-1'))).toBe(false);
    const outside = await setLog({ log_file: '../escape.log' });
    expect(outside.status).toBe(400);
    expect(outside.body.error).toBe(`'log_file' must name a file under the directory given by --log-dir ('${dir}'): '../escape.log' is outside it`);
    expect((await setLog({ log_file: '/etc/cron.d/x' })).status).toBe(400);
    expect((await getJson(`${server.http}/v2/logging`)).body).toMatchObject({ log_file: other });
    await setLog({ log_file: logFile });
    await marker('back-1');
  });
});

describe('logging extension without --log-dir', () => {
  let server: Server;
  beforeAll(async () => {
    server = await startTestServer({ modelRepositories: [makeRepository({ simple: path.join(MODELS, 'simple') })] });
  }, 60_000);
  afterAll(() => server?.close());

  it("keeps Triton's answer to log_file", async () => {
    const r = await postJson(`${server.http}/v2/logging`, { log_file: '/tmp/x.log' });
    expect(r.status).toBe(501);
    expect(r.body.error).toBe('log file location can not be updated through network protocol');
  });
});

/**
 * End-to-end: a python model's `pb_utils.Logger` lines written while it executes a batch carry
 * the request ids of that batch on the server's log line (text and JSON formats): the client's id,
 * or the one Nereid assigns (the same one the server's own lines about the request carry), clipped
 * as error messages clip a client's text. Lines written in `initialize` and `finalize` carry none.
 * A stub's crash line names the requests the crash failed.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { call, inferenceClient, type Client } from './helpers/grpc-client';
import { makeRepository, postJson, ROOT, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

function linesOf(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l !== '') : [];
}

/** Waits until `count` lines of `file` match; returns them. */
async function linesMatching(file: string, re: RegExp, count = 1): Promise<string[]> {
  for (let i = 0; i < 200; i++) {
    const hits = linesOf(file).filter((l) => re.test(l));
    if (hits.length >= count) return hits;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`fewer than ${count} lines of ${file} match ${re}:\n${linesOf(file).slice(-10).join('\n')}`);
}

const body = (tag: number, id?: string) => ({
  ...(id === undefined ? {} : { id }),
  inputs: [{ name: 'INPUT0', shape: [1, 1], datatype: 'FP32', data: [tag] }],
});

describe("python model log lines carry their batch's request ids", () => {
  let server: Server;
  let client: Client;
  let logFile = '';
  const infer = async (tag: number, id?: string): Promise<void> => {
    const r = await postJson(`${server.http}/v2/models/log_requests/infer`, body(tag, id));
    expect(r.status).toBe(200);
  };
  /** The three lines (info, warn, error) the model wrote executing the request tagged `tag`. */
  const executeLines = (tag: number) => linesMatching(logFile, new RegExp(`log_requests (execute \\d request\\(s\\)|warn|error) tag ${tag}"?\\W*$`), 3);

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'nereid-pylog-'));
    logFile = path.join(dir, 'server.log');
    const repo = makeRepository({
      log_requests: path.join(ROOT, 'test/fixtures/python/log_requests'),
      crash: path.join(ROOT, 'test/fixtures/python/crash'),
    });
    server = await startTestServer({
      modelRepositories: [repo], modelControlMode: 'explicit', loadModels: ['log_requests', 'crash'],
      logFile, logDir: dir, logInfo: true, logWarning: true, logError: true,
    });
    client = inferenceClient(server.grpcPort);
  }, 60_000);
  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it('initialize writes its line with no request id', async () => {
    const [line] = await linesMatching(logFile, /log_requests initialize$/);
    expect(line).toMatch(/^I\d{4} [\d:.]+ \d+ nereid\] \[log_requests:1\] model\.py:\d+\] log_requests initialize$/);
  });

  it("execute's lines carry the client's id, over HTTP and gRPC, at every level", async () => {
    await infer(7, 'client-7');
    const lines = await executeLines(7);
    expect(lines[0]).toMatch(/^I\d{4} [\d:.]+ \d+ nereid\] \[request id: client-7\] \[log_requests:1\] model\.py:\d+\] log_requests execute 1 request\(s\) tag 7$/);
    expect(lines[1]).toMatch(/^W.* nereid\] \[request id: client-7\] .*log_requests warn tag 7$/);
    expect(lines[2]).toMatch(/^E.* nereid\] \[request id: client-7\] .*log_requests error tag 7$/);
    // log_verbose is written only at a verbose level above 0.
    expect(linesOf(logFile).some((l) => l.includes('verbose tag 7'))).toBe(false);

    await call(client, 'ModelInfer', {
      model_name: 'log_requests', id: 'grpc-8',
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 1], contents: { fp32_contents: [8] } }],
    });
    for (const line of await executeLines(8)) expect(line).toContain('] [request id: grpc-8] [log_requests:1] ');
  });

  it('a request sent without an id gets one assigned, the same on each of its lines, another for the next', async () => {
    await infer(9);
    await infer(10);
    const ids = async (tag: number) => (await executeLines(tag)).map((l) => /\[request id: (nereid-\d+)\]/.exec(l)?.[1]);
    const [first, second] = [await ids(9), await ids(10)];
    expect(first[0]).toMatch(/^nereid-\d+$/);
    expect(new Set(first).size).toBe(1);
    expect(new Set(second).size).toBe(1);
    expect(second[0]).toMatch(/^nereid-\d+$/);
    expect(second[0]).not.toBe(first[0]);
  });

  it('a batch of two requests: its lines carry both ids', async () => {
    // The model waits up to 300 ms for a batch of two.
    await Promise.all([infer(11, 'pair-a'), infer(11, 'pair-b')]);
    const [line] = await linesMatching(logFile, /log_requests execute 2 request\(s\) tag 11$/);
    expect(line).toMatch(/\] \[request id: (pair-a, pair-b|pair-b, pair-a)\] \[log_requests:1\] /);
  });

  it('a client id longer than ECHO_LIMIT is clipped on the line, as error messages clip it', async () => {
    await infer(14, 'x'.repeat(1000));
    for (const line of await executeLines(14)) expect(line).toContain(`] [request id: ${'x'.repeat(256)}...] [log_requests:1] `);
  });

  it("the stub's crash line names the requests the crash failed", async () => {
    const crash = (id?: string) =>
      postJson(`${server.http}/v2/models/crash/infer`, { ...(id === undefined ? {} : { id }), inputs: [{ name: 'MODE', datatype: 'INT32', shape: [1], data: [1] }] });
    expect((await crash('crash-1')).status).toBe(500);
    const [line] = await linesMatching(logFile, /python stub of model 'crash' .*; restarting it$/);
    expect(line).toMatch(/^E\d{4} .* nereid\] \[request id: crash-1\] \[crash:1\] python stub of model 'crash' \(instance 'crash_0'\) .*; restarting it$/);
    // Without a client id: the one assigned to it.
    expect((await crash()).status).toBe(500);
    const [, second] = await linesMatching(logFile, /python stub of model 'crash' .*; restarting it$/, 2);
    expect(second).toMatch(/\] \[request id: nereid-\d+\] \[crash:1\] python stub/);
  });

  it('JSON format: request_id, or request_ids for a batch of several; the verbose arrival line and the model share an assigned id', async () => {
    expect((await postJson(`${server.http}/v2/logging`, { log_format: 'json', log_verbose_level: 1 })).status).toBe(200);
    await infer(12, 'json-12');
    const [info, warn, error, verbose] = (await linesMatching(logFile, /log_requests (execute|warn|error|verbose).* tag 12"/, 4)).map((l) => JSON.parse(l));
    expect(info).toMatchObject({ level: 'INFO', request_id: 'json-12' });
    expect(info.message).toMatch(/^\[log_requests:1\] model\.py:\d+\] log_requests execute 1 request\(s\) tag 12$/);
    expect(warn).toMatchObject({ level: 'WARNING', request_id: 'json-12' });
    expect(error).toMatchObject({ level: 'ERROR', request_id: 'json-12' });
    expect(verbose).toMatchObject({ level: 'VERBOSE', request_id: 'json-12' });

    await Promise.all([infer(13, 'json-a'), infer(13)]);
    const [pair] = (await linesMatching(logFile, /execute 2 request\(s\) tag 13"/)).map((l) => JSON.parse(l));
    expect(pair.request_id).toBeUndefined();
    expect(pair.request_ids).toHaveLength(2);
    expect(pair.request_ids).toContain('json-a');
    const assigned = pair.request_ids.find((id: string) => id !== 'json-a');
    expect(assigned).toMatch(/^nereid-\d+$/);
    // The server's own verbose line about that request carries the same assigned id.
    const arrivals = (await linesMatching(logFile, /HTTP infer request for model 'log_requests'/, 3)).map((l) => JSON.parse(l));
    expect(arrivals.map((a) => a.request_id)).toContain(assigned);
    expect((await postJson(`${server.http}/v2/logging`, { log_format: 'default', log_verbose_level: 0 })).status).toBe(200);
  });

  it('finalize writes its line with no request id', async () => {
    expect((await postJson(`${server.http}/v2/repository/models/log_requests/unload`)).status).toBe(200);
    const [line] = await linesMatching(logFile, /log_requests finalize$/);
    expect(line).toMatch(/^I.* nereid\] \[log_requests:1\] model\.py:\d+\] log_requests finalize$/);
  });
});

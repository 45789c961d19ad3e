import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { LogSettings } from '@nereid/core';
import type { InferenceRequest } from '@nereid/protocol';
import { ServerLogger } from './logger';

async function linesOf(file: string, count: number): Promise<string[]> {
  for (let i = 0; i < 200; i++) {
    const lines = (existsSync(file) ? readFileSync(file, 'utf8') : '').split('\n').filter((l) => l !== '');
    if (lines.length >= count) return lines;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`${file} did not get ${count} lines`);
}

/** Every level on, default format, into `file`. */
const settings = (file: string): LogSettings => ({
  log_file: file,
  log_info: true,
  log_warning: true,
  log_error: true,
  log_verbose_level: 0,
  log_format: 'default',
});

describe('ServerLogger', () => {
  it('writes each message as one line, client text escaped', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'nereid-log-'));
    const file = path.join(dir, 'server.log');
    const logger = new ServerLogger(settings(file));
    const name = "m\nI0101 00:00:00.000000 1 nereid] successfully loaded 'admin'\r\x1b[2J";
    logger.log('error', `failed to load '${name}': bad`);
    logger.log('info', 'next');
    const lines = await linesOf(file, 2);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^E\d{4} [\d:.]+ \d+ nereid\] failed to load 'm\\nI0101 00:00:00.000000 1 nereid\] successfully loaded 'admin'\\r\\x1b\[2J': bad$/);
    expect(lines[1]).toMatch(/^I\d{4} [\d:.]+ \d+ nereid\] next$/);
    await logger.close();
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('ServerLogger at run time', () => {
  it('follows the live settings: levels, json format, another file, request ids', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'nereid-log-'));
    const first = path.join(dir, 'a.log');
    const s = settings(first);
    const logger = new ServerLogger(s, true);
    logger.request('verbose', 'r0', 'not written: verbose is off');
    logger.request('info', 'r1', 'about r1');
    s.log_info = false;
    logger.log('info', 'not written: info is off');
    s.log_info = true;
    s.log_format = 'json';
    logger.request('warn', 'r2', 'about "r2"\n');
    logger.accessLine({ protocol: 'HTTP', method: 'POST', target: '/v2/models/m/infer', status: 200, durationMs: 1.5, client: '127.0.0.1:1', model: 'm', requestId: 'r2' });
    s.log_file = path.join(dir, 'b.log');
    logger.log('error', 'in b');
    await logger.close();
    const a = await linesOf(first, 3);
    expect(a).toHaveLength(3);
    expect(a[0]).toMatch(/^I\d{4} [\d:.]+ \d+ nereid\] \[request id: r1\] about r1$/);
    expect(JSON.parse(a[1])).toMatchObject({ level: 'WARNING', message: 'about "r2"\n', request_id: 'r2', pid: process.pid });
    expect(JSON.parse(a[2])).toMatchObject({ access: true, method: 'POST', status: 200, duration_ms: 1.5, model: 'm', request_id: 'r2' });
    const b = await linesOf(path.join(dir, 'b.log'), 1);
    expect(JSON.parse(b[0])).toMatchObject({ level: 'ERROR', message: 'in b' });
    expect(logger.assignId()).toBe('nereid-1');
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('ServerLogger: lines about the requests of a batch', () => {
  const request = (id: string): InferenceRequest => ({
    id, modelName: 'm', modelVersion: -1, inputs: [], parameters: {}, sequenceId: 0n, sequenceStart: false, sequenceEnd: false, priority: 0, timeoutUs: 0,
  });

  it("carries the batch's ids, the client's or one assigned once per request, in text and JSON", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'nereid-log-'));
    const file = path.join(dir, 'a.log');
    const s = settings(file);
    const logger = new ServerLogger(s);
    const [a, anonymous] = [request('a'), request('')];
    logger.log('info', 'model.py:3] one', [a]);
    logger.log('warn', 'model.py:4] two', [a, anonymous]);
    logger.log('info', 'model.py:5] again', [anonymous]);
    logger.log('info', 'model.py:1] initialize', undefined);
    logger.log('info', 'model.py:1] no batch', []);
    s.log_format = 'json';
    logger.log('error', 'model.py:6] json one', [anonymous]);
    logger.log('error', 'model.py:7] json two', [a, anonymous]);
    await logger.close();
    const lines = await linesOf(file, 7);
    expect(lines[0]).toMatch(/\] \[request id: a\] model\.py:3\] one$/);
    expect(lines[1]).toMatch(/\] \[request id: a, nereid-1\] model\.py:4\] two$/);
    // The id assigned to a request stays its id on every later line.
    expect(lines[2]).toMatch(/\] \[request id: nereid-1\] model\.py:5\] again$/);
    expect(anonymous.logId).toBe('nereid-1');
    expect(lines[3]).toMatch(/nereid\] model\.py:1\] initialize$/);
    expect(lines[4]).toMatch(/nereid\] model\.py:1\] no batch$/);
    const one = JSON.parse(lines[5]);
    expect(one).toMatchObject({ level: 'ERROR', message: 'model.py:6] json one', request_id: 'nereid-1' });
    expect(one.request_ids).toBeUndefined();
    const two = JSON.parse(lines[6]);
    expect(two).toMatchObject({ message: 'model.py:7] json two', request_ids: ['a', 'nereid-1'] });
    expect(two.request_id).toBeUndefined();
    expect(logger.idOf(request(''))).toBe('nereid-2');
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('ServerLogger request ids', () => {
  it('clips a long client id as error messages do, on request lines and access lines, text and JSON', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'nereid-log-'));
    const file = path.join(dir, 'server.log');
    const s = settings(file);
    const logger = new ServerLogger(s, true);
    const long = 'y'.repeat(5000);
    const clipped = `${'y'.repeat(256)}...`;
    logger.request('info', long, 'about it');
    logger.accessLine({ protocol: 'GRPC', method: 'RPC', target: '/x', status: 0, durationMs: 1, client: 'c', model: 'm', requestId: long });
    s.log_format = 'json';
    logger.log('info', 'two', [{ id: long } as InferenceRequest, { id: 'short' } as InferenceRequest]);
    logger.accessLine({ protocol: 'HTTP', method: 'POST', target: '/x', status: 200, durationMs: 1, client: 'c', model: 'm', requestId: long });
    const lines = await linesOf(file, 4);
    expect(lines[0]).toMatch(new RegExp(`\\] \\[request id: ${clipped.replace(/\./g, '\\.')}\\] about it$`));
    expect(lines[1].endsWith(` id=${clipped}`)).toBe(true);
    expect(JSON.parse(lines[2]).request_ids).toEqual([clipped, 'short']);
    expect(JSON.parse(lines[3]).request_id).toBe(clipped);
    await logger.close();
    rmSync(dir, { recursive: true, force: true });
  });
});

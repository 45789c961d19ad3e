import * as fs from 'node:fs';
import type { LogSettings } from '@nereid/core';
import type { AccessEntry, RequestLog } from '@nereid/gateway';
import { echo, escapeControlCharacters, type InferenceRequest } from '@nereid/protocol';

export type LogLevel = 'info' | 'warn' | 'error' | 'verbose';

const LETTER: Record<LogLevel, string> = { info: 'I', warn: 'W', error: 'E', verbose: 'I' };
const JSON_LEVEL: Record<LogLevel, string> = { info: 'INFO', warn: 'WARNING', error: 'ERROR', verbose: 'VERBOSE' };

function pad(n: number, w = 2): string {
  return String(n).padStart(w, '0');
}

/**
 * Triton-style log lines, honouring the live settings of the logging extension: each line reads
 * the levels, the format and the file as they are now, so a change through `/v2/logging` or gRPC
 * LogSettings applies to the next line. Formats: Triton's `default` and `ISO8601`, and `json` (one
 * object per line: time, level, pid, message, and request_id for a line about a request). Lines
 * about a request carry its id (`[request id: <id>] ` as Triton writes it), a python model's lines
 * written in `execute` those of the batch it runs.
 */
export class ServerLogger implements RequestLog {
  private file = '';
  private stream: fs.WriteStream | undefined;
  private nextId = 0;

  constructor(
    private readonly settings: LogSettings,
    /** `--access-log`: one line per request. */
    readonly access = false,
  ) {}

  private write(line: string): void {
    const file = this.settings.log_file;
    if (file !== this.file) this.open(file);
    if (this.stream) this.stream.write(line + '\n');
    else process.stderr.write(line + '\n');
  }

  /** Switches to another file (or back to the console for ''); the old file is closed once written. */
  private open(file: string): void {
    this.stream?.end();
    this.stream = undefined;
    this.file = file;
    if (!file) return;
    const stream = fs.createWriteStream(file, { flags: 'a' });
    stream.on('error', (e) => {
      if (this.stream === stream) this.stream = undefined;
      process.stderr.write(`E nereid] cannot write the log file '${file}': ${e.message}\n`);
    });
    this.stream = stream;
  }

  private enabled(level: LogLevel): boolean {
    switch (level) {
      case 'info':
        return this.settings.log_info;
      case 'warn':
        return this.settings.log_warning;
      case 'error':
        return this.settings.log_error;
      case 'verbose':
        return this.settings.log_verbose_level > 0;
    }
  }

  /** Whether verbose lines (e.g. about each request) are wanted now. */
  get verbose(): boolean {
    return this.settings.log_verbose_level > 0;
  }

  /**
   * A line; `requests`: the requests it is about (a python model's line written in `execute`):
   * their ids go on it, as on every line about a request.
   */
  log = (level: LogLevel, message: string, requests?: readonly InferenceRequest[]): void => {
    if (!this.enabled(level)) return;
    this.line(level, message, requests && requests.length > 0 ? requests.map((r) => this.idOf(r)) : undefined);
  };

  /** A line about one request: its id (the client's, or one assigned here) goes on it. */
  request = (level: LogLevel, requestId: string, message: string): void => {
    if (this.enabled(level)) this.line(level, message, [requestId]);
  };

  /** An id for a request the client sent none for, for its log lines ("nereid-<n>"). */
  assignId(): string {
    return `nereid-${++this.nextId}`;
  }

  /** A request's id for the log: the client's, else the one assigned to it (assigned now if it has none yet). */
  idOf(request: InferenceRequest): string {
    return request.id || (request.logId ??= this.assignId());
  }

  /** The access log's line for one request (written whatever the levels: --access-log asked for it). */
  accessLine = (e: AccessEntry): void => {
    const id = e.requestId ? echo(e.requestId) : '';
    const fields = `${e.protocol} ${e.method} ${e.target} ${e.status} ${e.durationMs.toFixed(3)}ms client=${e.client} model=${e.model || '-'} id=${id || '-'}`;
    if (this.settings.log_format === 'json') {
      this.write(
        JSON.stringify({
          time: new Date().toISOString(),
          level: 'INFO',
          pid: process.pid,
          access: true,
          protocol: e.protocol,
          method: e.method,
          target: e.target,
          status: e.status,
          duration_ms: Number(e.durationMs.toFixed(3)),
          client: e.client,
          model: e.model || undefined,
          request_id: id || undefined,
        }),
      );
      return;
    }
    this.line('info', `access ${fields}`, undefined);
  };

  /**
   * One line. `ids`: the requests it is about: `[request id: <id>] ` as Triton writes it (several
   * ids comma-separated); in JSON `request_id`, or `request_ids` (an array) for several. A
   * client's id is clipped as error messages clip it (`echo`): a 1 MB id makes no 1 MB line.
   */
  private line(level: LogLevel, message: string, clientIds: readonly string[] | undefined): void {
    const ids = clientIds?.map(echo);
    const d = new Date();
    if (this.settings.log_format === 'json') {
      const entry: Record<string, unknown> = { time: d.toISOString(), level: JSON_LEVEL[level], pid: process.pid, message };
      if (ids?.length === 1) entry.request_id = ids[0];
      else if (ids && ids.length > 1) entry.request_ids = ids;
      // JSON.stringify escapes control characters: a client's text cannot break the line.
      this.write(JSON.stringify(entry));
      return;
    }
    const letter = LETTER[level];
    const micros = pad(d.getMilliseconds(), 3) + '000';
    const head =
      this.settings.log_format === 'ISO8601'
        ? `${d.toISOString().replace(/\.\d+Z$/, 'Z')} ${letter} ${process.pid} nereid]`
        : `${letter}${pad(d.getMonth() + 1)}${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${micros} ${process.pid} nereid]`;
    const text = ids && ids.length > 0 ? `[request id: ${ids.join(', ')}] ${message}` : message;
    // Messages carry client text (model names, ids, a model's own output): each entry stays one
    // line, so no client can write lines that look like the server's.
    this.write(`${head} ${escapeControlCharacters(text)}`);
  }

  /** Closes the log file (shutdown). */
  close(): Promise<void> {
    const stream = this.stream;
    this.stream = undefined;
    this.file = this.settings.log_file;
    if (!stream) return Promise.resolve();
    return new Promise((resolve) => stream.end(resolve));
  }
}

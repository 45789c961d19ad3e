import * as fs from 'node:fs';
import type { LogSettings } from '@nereid/core';
import { escapeControlCharacters } from '@nereid/protocol';

export type LogLevel = 'info' | 'warn' | 'error' | 'verbose';

const LETTER: Record<LogLevel, string> = { info: 'I', warn: 'W', error: 'E', verbose: 'I' };

function pad(n: number, w = 2): string {
  return String(n).padStart(w, '0');
}

/** Triton-style log lines, honouring the live (runtime-updatable) log settings. */
export class ServerLogger {
  private readonly out: (line: string) => void;

  constructor(private readonly settings: LogSettings) {
    if (settings.log_file) {
      const stream = fs.createWriteStream(settings.log_file, { flags: 'a' });
      this.out = (line) => stream.write(line + '\n');
    } else {
      this.out = (line) => process.stderr.write(line + '\n');
    }
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

  log = (level: LogLevel, message: string): void => {
    if (!this.enabled(level)) return;
    const d = new Date();
    const letter = LETTER[level];
    const micros = pad(d.getMilliseconds(), 3) + '000';
    const head =
      this.settings.log_format === 'ISO8601'
        ? `${d.toISOString().replace(/\.\d+Z$/, 'Z')} ${letter} ${process.pid} nereid]`
        : `${letter}${pad(d.getMonth() + 1)}${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${micros} ${process.pid} nereid]`;
    // Messages carry client text (model names, ids, a model's own output): each entry stays one
    // line, so no client can write lines that look like the server's.
    this.out(`${head} ${escapeControlCharacters(message)}`);
  };
}

import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { LogSettings } from '@nereid/core';
import { ServerLogger } from './logger';

async function linesOf(file: string, count: number): Promise<string[]> {
  for (let i = 0; i < 200; i++) {
    const lines = (existsSync(file) ? readFileSync(file, 'utf8') : '').split('\n').filter((l) => l !== '');
    if (lines.length >= count) return lines;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`${file} did not get ${count} lines`);
}

describe('ServerLogger', () => {
  it('writes each message as one line, client text escaped', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'nereid-log-'));
    const file = path.join(dir, 'server.log');
    const settings: LogSettings = {
      log_file: file,
      log_info: true,
      log_warning: true,
      log_error: true,
      log_verbose_level: 0,
      log_format: 'default',
    };
    const logger = new ServerLogger(settings);
    const name = "m\nI0101 00:00:00.000000 1 nereid] successfully loaded 'admin'\r\x1b[2J";
    logger.log('error', `failed to load '${name}': bad`);
    logger.log('info', 'next');
    const lines = await linesOf(file, 2);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^E\d{4} [\d:.]+ \d+ nereid\] failed to load 'm\\nI0101 00:00:00.000000 1 nereid\] successfully loaded 'admin'\\r\\x1b\[2J': bad$/);
    expect(lines[1]).toMatch(/^I\d{4} [\d:.]+ \d+ nereid\] next$/);
    rmSync(dir, { recursive: true, force: true });
  });
});

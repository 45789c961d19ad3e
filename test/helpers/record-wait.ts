/**
 * The python model test/fixtures/python/record_wait: it writes each executed request's id to
 * executed.txt in its model folder, then waits WAIT_MS milliseconds, so a test sees which requests
 * really ran and can keep the model's only instance busy.
 */
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { ROOT } from './server';

export const RECORD_WAIT = path.join(ROOT, 'test/fixtures/python/record_wait');

/** record_wait as model `name` of `repo`, with `maxBatchSize` and `scheduling` (e.g. a dynamic_batching block). */
export function recordWaitVariant(repo: string, name: string, maxBatchSize: number, scheduling: string): void {
  cpSync(path.join(RECORD_WAIT, '1'), path.join(repo, name, '1'), { recursive: true });
  writeFileSync(
    path.join(repo, name, 'config.pbtxt'),
    `name: "${name}"\nbackend: "python"\nmax_batch_size: ${maxBatchSize}\n` +
      'input [ { name: "WAIT_MS" data_type: TYPE_INT32 dims: [ 1 ] } ]\n' +
      'output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n' +
      `instance_group [ { count: 1 kind: KIND_CPU } ]\n${scheduling}\n`,
  );
}

/** The request ids model `model` of `repo` (a record_wait) has executed, in order. */
export function executedIds(repo: string, model: string): string[] {
  const file = path.join(repo, model, 'executed.txt');
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

/** Reading back Triton's trace files (`<file>.<n>`, one JSON array of records each) in end-to-end tests. */
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { defaultTraceConfig, type TraceConfig } from '../../apps/nereid/src/trace-config';
import type { Msg } from './grpc-client';

/** One record of a trace file: a trace's head (model, ids), its timestamps, or a tensor. */
export interface TraceRecord {
  id: number;
  model_name?: string;
  model_version?: number;
  request_id?: string;
  parent_id?: number;
  timestamps?: { name: string; ns: number }[];
  activity?: string;
  tensor?: Msg;
}

/** Every record in the files `<base>.<n>` of `dir`, in index order; a file still being written counts as empty. */
export function recordsOf(dir: string, base: string): TraceRecord[] {
  const files = readdirSync(dir)
    .filter((f) => f.startsWith(`${base}.`) && /^\d+$/.test(f.slice(base.length + 1)))
    .sort((a, b) => Number(a.slice(base.length + 1)) - Number(b.slice(base.length + 1)));
  return files.flatMap((f) => {
    try {
      return JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as TraceRecord[];
    } catch {
      return []; // being written
    }
  });
}

/** Triton mode tracing every request's timestamps into `<dir>/trace.json.<n>` (a file per trace), `--trace-dir` `dir`. */
export function traceEveryRequest(dir: string): TraceConfig {
  return { ...defaultTraceConfig(), level: ['TIMESTAMPS'], rate: 1, count: -1, mode: 'triton', file: path.join(dir, 'trace.json'), logFrequency: 1, dir };
}

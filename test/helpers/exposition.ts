/** Reading the Prometheus text exposition of a metrics port in end-to-end tests. */
import { existsSync } from 'node:fs';
import * as path from 'node:path';

export type Labels = Record<string, string>;

export interface Line {
  name: string;
  labels: Labels;
  value: number;
}

/** The exposition's samples (comments dropped), labels parsed. */
export function parse(text: string): Line[] {
  const out: Line[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Labels = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/** The one sample of `name` whose labels include `labels`. */
export function sample(lines: Line[], name: string, labels: Labels): number {
  const hits = lines.filter((l) => l.name === name && Object.entries(labels).every(([k, v]) => l.labels[k] === v));
  if (hits.length !== 1) throw new Error(`${hits.length} samples of ${name}${JSON.stringify(labels)}`);
  return hits[0].value;
}

/** The metrics port's exposition, parsed. */
export async function scrape(metricsUrl: string): Promise<Line[]> {
  return parse(await (await fetch(metricsUrl)).text());
}

/** Whether an nvidia-smi is on PATH: the GPU families show only then. */
export function nvidiaSmiOnPath(): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => dir !== '' && existsSync(path.join(dir, 'nvidia-smi')));
}

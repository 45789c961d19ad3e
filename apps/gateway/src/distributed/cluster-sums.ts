import type { ModelState, ModelStatistics, RepositoryIndexEntry, StatDuration } from '@nereid/core';

/**
 * The statistics and repository index of a cluster, from what each process answered (distributed
 * mode). In the cluster a request's own figures (success, fail, queue and compute times, counts)
 * are kept by the gateway that holds its client, and each execution's (batch_stats, execution
 * count) by the worker that ran it: summing every process's figures gives each once.
 */

const add = (a: StatDuration, b: StatDuration | undefined): StatDuration => ({ count: a.count + (b?.count ?? 0), ns: a.ns + (b?.ns ?? 0) });

const INFERENCE_STATS = ['success', 'fail', 'queue', 'compute_input', 'compute_infer', 'compute_output', 'cache_hit', 'cache_miss'] as const;

/** One model version's statistics summed over processes (each an answer in the statistics extension's JSON shape). */
export function sumStatistics(own: ModelStatistics, others: readonly ModelStatistics[]): ModelStatistics {
  const out: ModelStatistics = structuredClone(own);
  for (const o of others) {
    out.last_inference = Math.max(out.last_inference, o.last_inference ?? 0);
    out.inference_count += o.inference_count ?? 0;
    out.execution_count += o.execution_count ?? 0;
    for (const k of INFERENCE_STATS) out.inference_stats[k] = add(out.inference_stats[k], o.inference_stats?.[k]);
    for (const [key, kinds] of Object.entries(o.response_stats ?? {})) {
      const mine = (out.response_stats[key] ??= {});
      for (const [kind, d] of Object.entries(kinds)) mine[kind] = add(mine[kind] ?? { count: 0, ns: 0 }, d);
    }
    for (const b of o.batch_stats ?? []) {
      const mine = out.batch_stats.find((x) => x.batch_size === b.batch_size);
      if (!mine) {
        out.batch_stats.push(structuredClone(b));
        continue;
      }
      mine.compute_input = add(mine.compute_input, b.compute_input);
      mine.compute_infer = add(mine.compute_infer, b.compute_infer);
      mine.compute_output = add(mine.compute_output, b.compute_output);
    }
    for (const m of o.memory_usage ?? []) {
      const mine = out.memory_usage.find((x) => x.type === m.type && x.id === m.id);
      if (mine) mine.byte_size += m.byte_size;
      else out.memory_usage.push({ ...m });
    }
  }
  out.batch_stats.sort((a, b) => a.batch_size - b.batch_size);
  return out;
}

/** Every version's statistics summed: `own` decides which versions there are (the asking gateway's answer). */
export function sumAll(own: readonly ModelStatistics[], answers: ReadonlyArray<readonly ModelStatistics[]>): ModelStatistics[] {
  return own.map((s) => sumStatistics(s, answers.flatMap((a) => a.filter((o) => o.name === s.name && o.version === s.version))));
}

/** What the index shows of one version in the cluster, from the workers' rows of it. */
function mergeWorkers(rows: readonly RepositoryIndexEntry[]): RepositoryIndexEntry {
  const first = rows[0];
  const any = (state: ModelState): RepositoryIndexEntry | undefined => rows.find((r) => r.state === state);
  const ready = any('READY') ?? any('LOADING') ?? any('UNLOADING');
  if (ready) return { name: first.name, version: first.version, state: ready.state, reason: '' };
  // Unavailable everywhere: the reason of a failed load says more than 'unloaded'.
  const failed = rows.find((r) => r.reason && r.reason !== 'unloaded') ?? first;
  return { name: first.name, version: first.version, state: failed.state ?? 'UNAVAILABLE', reason: failed.reason ?? '' };
}

/**
 * The cluster's repository index, as a gateway answers it: its own rows, where
 * - a version this gateway has READY is READY only while a live worker serves it (ensembles: always);
 * - a version that is not READY here shows the reason a worker gave when this gateway has none of its own;
 * - a model this gateway never loaded shows the workers' versions, READY if one worker has it READY.
 */
export function mergeIndex(
  own: readonly RepositoryIndexEntry[],
  workers: ReadonlyArray<readonly RepositoryIndexEntry[]>,
  served: (name: string, version: number) => boolean,
): RepositoryIndexEntry[] {
  const byVersion = new Map<string, RepositoryIndexEntry[]>();
  for (const rows of workers) {
    for (const r of rows) {
      if (r.version === undefined) continue;
      const k = `${r.name}/${r.version}`;
      byVersion.set(k, [...(byVersion.get(k) ?? []), r]);
    }
  }
  const out: RepositoryIndexEntry[] = [];
  for (const row of own) {
    if (row.version === undefined) {
      const theirs = [...byVersion.entries()].filter(([k]) => k.slice(0, k.lastIndexOf('/')) === row.name);
      if (theirs.length === 0) out.push(row);
      else for (const [, rows] of theirs.sort(([a], [b]) => a.localeCompare(b, undefined, { numeric: true }))) out.push(mergeWorkers(rows));
      continue;
    }
    const theirs = byVersion.get(`${row.name}/${row.version}`);
    if (row.state === 'READY') {
      const v = Number(row.version);
      out.push(served(row.name, v) ? row : { ...row, state: 'UNAVAILABLE', reason: `no live worker of the cluster serves model '${row.name}' version ${v}` });
      continue;
    }
    const failed = theirs?.find((r) => r.state === 'UNAVAILABLE' && r.reason && r.reason !== 'unloaded');
    out.push(failed && (!row.reason || row.reason === 'unloaded' || row.reason.startsWith('no worker of the cluster')) ? { ...row, reason: failed.reason } : row);
  }
  return out;
}

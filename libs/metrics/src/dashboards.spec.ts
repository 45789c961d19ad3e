/**
 * docker/prometheus.yml and docker/grafana/nereid.json: both parse, the scrape job reads the
 * metrics port's path, and every metric name the dashboard queries is one Nereid exports
 * (checked against a real exposition of every family with one model served).
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { parseMetricsConfig } from './metrics-config';
import { NereidMetrics } from './nereid-metrics';
import type { ModelCounts, StatsSource } from './stats-port';

const DOCKER = path.resolve(__dirname, '../../../docker');

/** Every metric name an expression uses (PromQL functions and label names are not `nv_` / `nereid_`). */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\b((?:nv|nereid)_[a-zA-Z0-9_]+)/g)].map((m) => m[1]);
}

async function exposedNames(): Promise<Set<string>> {
  const metrics = new NereidMetrics({ settings: parseMetricsConfig(['histogram_latencies=true']), cpu: true, intervalMs: 2000 });
  const zero = { count: 0, ns: 0 };
  const counts: ModelCounts = {
    inferenceCount: 1,
    executionCount: 1,
    success: { count: 1, ns: 1e6 },
    queue: zero,
    computeInput: zero,
    computeInfer: zero,
    computeOutput: zero,
    failuresByReason: new Map(),
  };
  const observer = metrics.observerFor('m', 1)!;
  const source: StatsSource = {
    served: () => [{ model: 'm', version: '1', key: 'm/1', tags: {}, counts, loadSecs: 0.5, observer }],
    pending: () => 0,
    inflight: () => 0,
    sequenceSlotsInUse: () => 2,
  };
  metrics.attach(source);
  observer.success(1e6, 1);
  observer.execution(1e5, { inputNs: 1e4, inferNs: 1e5, outputNs: 1e4 });
  observer.batch(1);
  observer.firstResponse(1e6);
  metrics.custom.stubRestarted('m', 1);
  const text = await metrics.expose();
  return new Set(text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(l)![0]));
}

describe('docker/ monitoring files', () => {
  it('prometheus.yml scrapes /metrics on the metrics port', () => {
    const config = parseYaml(readFileSync(path.join(DOCKER, 'prometheus.yml'), 'utf8'));
    const job = config.scrape_configs.find((j: { job_name: string }) => j.job_name === 'nereid');
    expect(job.metrics_path).toBe('/metrics');
    expect(job.static_configs[0].targets).toEqual(['localhost:8002']);
  });

  it('the Grafana dashboard is importable JSON whose every metric Nereid exports', async () => {
    const dashboard = JSON.parse(readFileSync(path.join(DOCKER, 'grafana/nereid.json'), 'utf8'));
    expect(dashboard.title).toBe('Nereid');
    expect(dashboard.__inputs[0]).toMatchObject({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' });
    const exprs: string[] = dashboard.panels.flatMap((p: { targets: { expr: string }[] }) => p.targets.map((t) => t.expr));
    exprs.push(...dashboard.templating.list.map((v: { definition: string }) => v.definition));
    const used = new Set(exprs.flatMap(metricNames));
    // What the issue asks the dashboard to show.
    for (const name of [
      'nv_inference_request_success',
      'nereid_inference_request_duration_ms_bucket',
      'nereid_inference_queue_duration_ms_bucket',
      'nereid_inference_batch_size_bucket',
      'nv_inference_request_failure',
      'nereid_python_stub_restarts_total',
    ]) {
      expect(used).toContain(name);
    }
    const exposed = await exposedNames();
    expect([...used].filter((name) => !exposed.has(name))).toEqual([]);
    const ids = dashboard.panels.map((p: { id: number }) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

import type { Registry } from 'prom-client';
import type { MetricsSettings } from './metrics-config';
import { SnapshotCounter, SnapshotGauge, type Labels, type Sample } from './snapshot-family';
import { FAILURE_REASONS, type ModelCounts, type ServedVersion, type StatsSource } from './stats-port';

/** Whole microseconds, as Triton's uint64 duration counters. */
function micros(ns: number): number {
  return Math.floor(ns / 1000);
}

/** `model`, `version`, then the model's `metric_tags` as `_<key>` labels (Triton's order). */
export function modelLabels(v: ServedVersion, extra?: Labels): Labels {
  const all: Labels = { model: v.model, version: v.version, ...extra };
  for (const [k, value] of Object.entries(v.tags)) all[`_${k}`] = value;
  // Triton's exposition (prometheus-cpp keeps labels in a sorted map) prints them in name order:
  // model="m",reason="BACKEND",version="1". Scripts that match the text depend on it.
  const labels: Labels = {};
  for (const k of Object.keys(all).sort()) labels[k] = all[k];
  return labels;
}

interface CountFamily {
  name: string;
  help: string;
  value: (c: ModelCounts) => number;
}

const COUNTS: CountFamily[] = [
  { name: 'nv_inference_request_success', help: 'Number of successful inference requests, all batch sizes', value: (c) => c.success.count },
  { name: 'nv_inference_count', help: 'Number of inferences performed (does not include cached requests)', value: (c) => c.inferenceCount },
  { name: 'nv_inference_exec_count', help: 'Number of model executions performed (does not include cached requests)', value: (c) => c.executionCount },
];

// Triton adds a request's duration to the request counter when it succeeds only.
const LATENCIES: CountFamily[] = [
  { name: 'nv_inference_request_duration_us', help: 'Cumulative inference request duration in microseconds (includes cached requests)', value: (c) => micros(c.success.ns) },
  { name: 'nv_inference_queue_duration_us', help: 'Cumulative inference queuing duration in microseconds (includes cached requests)', value: (c) => micros(c.queue.ns) },
  {
    name: 'nv_inference_compute_input_duration_us',
    help: 'Cumulative compute input duration in microseconds (does not include cached requests)',
    value: (c) => micros(c.computeInput.ns),
  },
  {
    name: 'nv_inference_compute_infer_duration_us',
    help: 'Cumulative compute inference duration in microseconds (does not include cached requests)',
    value: (c) => micros(c.computeInfer.ns),
  },
  {
    name: 'nv_inference_compute_output_duration_us',
    help: 'Cumulative inference compute output duration in microseconds (does not include cached requests)',
    value: (c) => micros(c.computeOutput.ns),
  },
];

/**
 * Triton's per-model counters and gauges, read from the statistics at each scrape: request
 * success and failure (by reason), inference and execution counts, pending requests, the
 * cumulative latency counters (unless `counter_latencies=false`) and the load time.
 */
export function registerTritonFamilies(registry: Registry, source: StatsSource, settings: MetricsSettings): void {
  const each = (sample: (v: ServedVersion) => Sample[]) => () => source.served().flatMap(sample);
  new SnapshotCounter(
    'nv_inference_request_failure',
    'Number of failed inference requests, all batch sizes',
    registry,
    each((v) => FAILURE_REASONS.map((reason) => ({ labels: modelLabels(v, { reason }), value: v.counts.failuresByReason.get(reason) ?? 0 }))),
  );
  for (const f of [...COUNTS, ...(settings.counterLatencies ? LATENCIES : [])]) {
    new SnapshotCounter(f.name, f.help, registry, each((v) => [{ labels: modelLabels(v), value: f.value(v.counts) }]));
  }
  new SnapshotGauge(
    'nv_inference_pending_request_count',
    'Instantaneous number of pending requests awaiting execution per-model.',
    registry,
    each((v) => [{ labels: modelLabels(v), value: source.pending(v.key) }]),
  );
  new SnapshotGauge('nv_model_load_duration_secs', 'Model load time in seconds', registry, each((v) => [{ labels: modelLabels(v), value: v.loadSecs }]));
}

import * as os from 'node:os';

/** What the exposition needs of one served model version. */
export interface ModelMetricsSample {
  model: string;
  version: string;
  tags: Record<string, string>;
  success: number;
  failures: Map<string, number>;
  inferenceCount: number;
  execCount: number;
  pending: number;
  requestNs: number;
  queueNs: number;
  computeInputNs: number;
  computeInferNs: number;
  computeOutputNs: number;
  loadSecs: number;
}

interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  value: (s: ModelMetricsSample) => number;
}

/** Whole microseconds, as Triton's uint64 duration counters. */
function micros(ns: number): number {
  return Math.floor(ns / 1000);
}

const FAMILIES: Family[] = [
  { name: 'nv_inference_request_success', help: 'Number of successful inference requests, all batch sizes', type: 'counter', value: (s) => s.success },
  { name: 'nv_inference_count', help: 'Number of inferences performed (does not include cached requests)', type: 'counter', value: (s) => s.inferenceCount },
  { name: 'nv_inference_exec_count', help: 'Number of model executions performed (does not include cached requests)', type: 'counter', value: (s) => s.execCount },
  { name: 'nv_inference_pending_request_count', help: 'Instantaneous number of pending requests awaiting execution per-model.', type: 'gauge', value: (s) => s.pending },
  { name: 'nv_inference_request_duration_us', help: 'Cumulative inference request duration in microseconds (includes cached requests)', type: 'counter', value: (s) => micros(s.requestNs) },
  { name: 'nv_inference_queue_duration_us', help: 'Cumulative inference queuing duration in microseconds (includes cached requests)', type: 'counter', value: (s) => micros(s.queueNs) },
  { name: 'nv_inference_compute_input_duration_us', help: 'Cumulative compute input duration in microseconds (does not include cached requests)', type: 'counter', value: (s) => micros(s.computeInputNs) },
  { name: 'nv_inference_compute_infer_duration_us', help: 'Cumulative compute inference duration in microseconds (does not include cached requests)', type: 'counter', value: (s) => micros(s.computeInferNs) },
  { name: 'nv_inference_compute_output_duration_us', help: 'Cumulative inference compute output duration in microseconds (does not include cached requests)', type: 'counter', value: (s) => micros(s.computeOutputNs) },
  { name: 'nv_model_load_duration_secs', help: 'Model load time in seconds', type: 'gauge', value: (s) => s.loadSecs },
];

const REASONS = ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER'];

function escape(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function labels(s: ModelMetricsSample, extra: Record<string, string> = {}): string {
  const all: Record<string, string> = { model: s.model, version: s.version, ...extra };
  for (const [k, v] of Object.entries(s.tags)) all[`_${k}`] = v;
  return Object.entries(all)
    .map(([k, v]) => `${k}="${escape(v)}"`)
    .join(',');
}

function num(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toFixed(3);
}

let lastCpu = os.cpus().map((c) => c.times);

function cpuUtilization(): number {
  const now = os.cpus().map((c) => c.times);
  let idle = 0;
  let total = 0;
  now.forEach((t, i) => {
    const p = lastCpu[i] ?? t;
    const d = (k: keyof typeof t) => t[k] - p[k];
    idle += d('idle');
    total += d('user') + d('nice') + d('sys') + d('idle') + d('irq');
  });
  lastCpu = now;
  return total > 0 ? 1 - idle / total : 0;
}

/** Prometheus text exposition of Triton's metric families. */
export function renderMetrics(samples: ModelMetricsSample[]): string {
  const lines: string[] = [];
  lines.push('# HELP nv_inference_request_failure Number of failed inference requests, all batch sizes');
  lines.push('# TYPE nv_inference_request_failure counter');
  for (const s of samples) {
    for (const r of REASONS) lines.push(`nv_inference_request_failure{${labels(s, { reason: r })}} ${s.failures.get(r) ?? 0}`);
  }
  for (const f of FAMILIES) {
    lines.push(`# HELP ${f.name} ${f.help}`);
    lines.push(`# TYPE ${f.name} ${f.type}`);
    for (const s of samples) lines.push(`${f.name}{${labels(s)}} ${num(f.value(s))}`);
  }
  const total = os.totalmem();
  lines.push('# HELP nv_cpu_utilization CPU utilization rate [0.0 - 1.0]');
  lines.push('# TYPE nv_cpu_utilization gauge');
  lines.push(`nv_cpu_utilization ${cpuUtilization().toFixed(6)}`);
  lines.push('# HELP nv_cpu_memory_total_bytes CPU total memory (RAM), in bytes');
  lines.push('# TYPE nv_cpu_memory_total_bytes gauge');
  lines.push(`nv_cpu_memory_total_bytes ${total}`);
  lines.push('# HELP nv_cpu_memory_used_bytes CPU used memory (RAM), in bytes');
  lines.push('# TYPE nv_cpu_memory_used_bytes gauge');
  lines.push(`nv_cpu_memory_used_bytes ${total - os.freemem()}`);
  return lines.join('\n') + '\n';
}

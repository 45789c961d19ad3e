import { defaultTraceStartup, OtelTraceSink, Tracer, type TraceStartup } from '@nereid/core';

/** OpenTelemetry export settings (`--trace-config opentelemetry,<setting>=<value>`), Triton's defaults. */
export interface OtelConfig {
  url: string;
  resource: Record<string, string>;
  bspMaxQueueSize: number;
  bspScheduleDelayMs: number;
  bspMaxExportBatchSize: number;
}

export interface TraceConfig extends TraceStartup {
  otel: OtelConfig;
}

export function defaultTraceConfig(): TraceConfig {
  return {
    ...defaultTraceStartup(),
    otel: {
      url: 'http://localhost:4318/v1/traces',
      resource: { 'service.name': 'triton-inference-server' },
      bspMaxQueueSize: 2048,
      bspScheduleDelayMs: 5000,
      bspMaxExportBatchSize: 512,
    },
  };
}

function integer(setting: string, value: string, min: number): number {
  if (!/^-?[0-9]+$/.test(value) || Number(value) < min) {
    throw new Error(`invalid value for trace setting '${setting}': ${value}`);
  }
  return Number(value);
}

function level(c: TraceConfig, value: string): void {
  const l = value.toUpperCase();
  if (l === 'OFF') c.level = ['OFF'];
  else if (l === 'TIMESTAMPS' || l === 'TENSORS') c.level = [...c.level.filter((x) => x !== 'OFF' && x !== l), l];
  else throw new Error(`invalid value for trace setting 'level': ${value}: expected OFF, TIMESTAMPS or TENSORS`);
}

/**
 * One `--trace-config` value, Triton's forms: `<setting>=<value>` for the global settings (rate,
 * level, count, mode) and `<mode>,<setting>=<value>` for a mode's own (`triton,file=`,
 * `triton,log-frequency=`, `opentelemetry,url=`, `opentelemetry,resource=<k>=<v>`,
 * `opentelemetry,bsp_*=`). Throws with the reason; the CLI wraps it in its usage error.
 */
export function applyTraceConfig(c: TraceConfig, value: string): void {
  const m = /^(?:(triton|opentelemetry),)?([^=,]+)=(.*)$/.exec(value);
  if (!m) throw new Error(`--trace-config option format is '<mode>,<setting>=<value>' or '<setting>=<value>'. Got ${value}`);
  const [, mode, setting, v] = m;
  if (mode === undefined) {
    if (setting === 'rate') c.rate = integer(setting, v, 0);
    else if (setting === 'count') c.count = integer(setting, v, -1);
    else if (setting === 'level') level(c, v);
    else if (setting === 'mode') {
      if (v !== 'triton' && v !== 'opentelemetry') throw new Error(`invalid value for trace setting 'mode': ${v}: expected triton or opentelemetry`);
      c.mode = v;
    } else if (setting === 'file') c.file = v;
    else if (setting === 'log-frequency' || setting === 'log_frequency') c.logFrequency = integer(setting, v, 0);
    else throw new Error(`unknown global trace setting '${setting}'`);
    return;
  }
  if (mode === 'triton') {
    if (setting === 'file') c.file = v;
    else if (setting === 'log-frequency' || setting === 'log_frequency') c.logFrequency = integer(setting, v, 0);
    else throw new Error(`unknown trace setting '${setting}' for mode triton`);
    return;
  }
  if (setting === 'url') c.otel.url = /^[a-z]+:\/\//i.test(v) ? v : `http://${v}`;
  else if (setting === 'resource') {
    const eq = v.indexOf('=');
    if (eq <= 0) throw new Error(`opentelemetry resource must be '<key>=<value>'. Got ${v}`);
    c.otel.resource[v.slice(0, eq)] = v.slice(eq + 1);
  } else if (setting === 'bsp_max_queue_size') c.otel.bspMaxQueueSize = integer(setting, v, 1);
  else if (setting === 'bsp_schedule_delay') c.otel.bspScheduleDelayMs = integer(setting, v, 0);
  else if (setting === 'bsp_max_export_batch_size') c.otel.bspMaxExportBatchSize = integer(setting, v, 1);
  else throw new Error(`unknown trace setting '${setting}' for mode opentelemetry`);
}

/** The trace extension as configured: Triton trace files, or OpenTelemetry export (its packages loaded only then). */
export function tracerOf(c: TraceConfig, log: (level: 'error' | 'warn', message: string) => void): Tracer {
  if (c.mode === 'triton' && !c.file && c.level.some((l) => l !== 'OFF')) {
    log('warn', "tracing is on but no trace file is set (--trace-config triton,file=<path>): traces are not written");
  }
  return new Tracer({
    startup: c,
    otel: c.mode === 'opentelemetry' ? new OtelTraceSink(c.otel) : undefined,
    log: (m) => log('error', m),
  });
}

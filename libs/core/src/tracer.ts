import type { InferenceRequest } from '@nereid/protocol';
import type { TraceSettings } from './core';
import { TraceFiles } from './trace-file';
import { CoreTrace, type TraceSink } from './trace-record';
import { TraceSettingsStore, type TraceStartup } from './trace-settings';

export interface TracerOptions {
  startup?: TraceStartup;
  /** OpenTelemetry mode's exporter (see trace-otel.ts); Triton mode writes trace files. */
  otel?: TraceSink & { close(): Promise<void> };
  log?: (message: string) => void;
}

/**
 * The trace extension: decides which requests are traced (rate, count, a client's trace context,
 * an ensemble's children) and hands finished traces to Triton's trace files or to OpenTelemetry.
 * While every level is OFF a request costs one test of `active`.
 */
export class Tracer {
  readonly settings: TraceSettingsStore;
  private readonly sink: TraceSink & { close(): Promise<void> };
  /** Traces not yet written, so that shutdown can write those whose requests never finished. */
  private readonly live = new Set<CoreTrace>();
  private readonly liveSink: TraceSink;
  private nextId = 1;

  constructor(options: TracerOptions = {}) {
    this.settings = new TraceSettingsStore(options.startup);
    const sink: TraceSink & { close(): Promise<void> } = options.otel ?? new TraceFiles(options.log);
    const live = this.live;
    this.sink = sink;
    this.liveSink = {
      started: sink.started?.bind(sink),
      finished: (t) => {
        live.delete(t);
        sink.finished(t);
      },
    };
  }

  get active(): boolean {
    return this.settings.active;
  }

  apply(model: string, update?: Record<string, unknown>): TraceSettings {
    return this.settings.apply(model, update);
  }

  /**
   * The trace of a request entering the core, or undefined when it is not sampled. The trace is
   * also set on the request (`request.trace`), for its front door and its ensemble steps.
   */
  start(request: InferenceRequest, modelName: string, modelVersion: number): CoreTrace | undefined {
    // A BLS call made without a traced parent's trace: never traced (see InferenceRequest.parentTrace).
    if (request.parentTrace === null) return undefined;
    const parent = request.parentTrace as CoreTrace | undefined;
    const scope = this.settings.scopeFor(modelName);
    let traced: boolean;
    if (parent !== undefined) traced = true;
    else if (request.ingress?.traceparent !== undefined && this.settings.mode === 'opentelemetry') traced = scope.take();
    else traced = scope.sample();
    if (!traced) {
      if (!scope.on) this.settings.apply(''); // refreshes `active` once a scope has run out
      return undefined;
    }
    const trace = new CoreTrace(this.nextId++, modelName, modelVersion, request.id, parent, parent?.scope ?? scope, request.ingress, this.liveSink);
    this.live.add(trace);
    request.trace = trace;
    this.liveSink.started?.(trace);
    trace.mark('REQUEST_START');
    trace.mark('QUEUE_START');
    trace.tensors('TENSOR_QUEUE_INPUT', request.inputs);
    return trace;
  }

  /** Writes every trace, finished or not, and waits for the files or the exporter. */
  async close(): Promise<void> {
    for (const t of [...this.live]) t.finish();
    await this.sink.close();
  }
}

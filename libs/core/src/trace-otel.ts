import type { Context, Span, TraceState, Tracer as OtelTracer } from '@opentelemetry/api';
import type { TracerProvider } from '@opentelemetry/sdk-trace';
import type { TraceIngress } from '@nereid/protocol';
import { epochMs, type CoreTrace, type TraceSink } from './trace-record';

/** Where and how spans are exported (`--trace-config opentelemetry,...`). */
export interface OtelExportOptions {
  /** OTLP/HTTP endpoint, e.g. `http://localhost:4318/v1/traces`. */
  url: string;
  resource: Record<string, string>;
  bspMaxQueueSize: number;
  bspScheduleDelayMs: number;
  bspMaxExportBatchSize: number;
}

interface Spans {
  /** The request as its front door saw it (only for a request from a client). */
  top?: Span;
  /** The request in the model. */
  model: Span;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

const TOP_EVENTS = new Set(['HTTP_RECV_START', 'HTTP_RECV_END', 'HTTP_SEND_START', 'HTTP_SEND_END', 'GRPC_WAITREAD_START', 'GRPC_WAITREAD_END', 'GRPC_SEND_START', 'GRPC_SEND_END']);
const COMPUTE_EVENTS = new Set(['COMPUTE_START', 'COMPUTE_INPUT_END', 'COMPUTE_OUTPUT_START', 'COMPUTE_END']);

/**
 * A span's W3C trace context as Triton hands it to a backend: a JSON object of the headers that
 * propagate it, `traceparent` and, when not empty, `tracestate`.
 */
function propagationHeaders(span: Span): string {
  const c = span.spanContext();
  const headers: Record<string, string> = { traceparent: `00-${c.traceId}-${c.spanId}-${(c.traceFlags & 0xff).toString(16).padStart(2, '0')}` };
  const state = c.traceState?.serialize();
  if (state) headers.tracestate = state;
  return JSON.stringify(headers);
}

/**
 * OpenTelemetry mode: each traced request becomes Triton's spans, exported over OTLP/HTTP by a
 * batch span processor: a top-level span for the front door's part (continuing the client's W3C
 * `traceparent`), a span for the model (an ensemble step's is a child of its ensemble's) and a
 * compute span; the Triton timestamps are the spans' events. The OpenTelemetry packages are
 * loaded only when this mode is chosen.
 */
export class OtelTraceSink implements TraceSink {
  private readonly provider: TracerProvider;
  private readonly tracer: OtelTracer;
  private readonly api: typeof import('@opentelemetry/api');

  constructor(options: OtelExportOptions) {
    /* eslint-disable @typescript-eslint/no-require-imports */
    this.api = require('@opentelemetry/api') as typeof import('@opentelemetry/api');
    const sdk = require('@opentelemetry/sdk-trace') as typeof import('@opentelemetry/sdk-trace');
    const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
    const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
    /* eslint-enable @typescript-eslint/no-require-imports */
    const processor = new sdk.BatchSpanProcessor({
      exporter: new OTLPTraceExporter({ url: options.url }),
      maxQueueSize: options.bspMaxQueueSize,
      scheduledDelayMillis: options.bspScheduleDelayMs,
      maxExportBatchSize: Math.min(options.bspMaxExportBatchSize, options.bspMaxQueueSize),
    });
    this.provider = new sdk.TracerProvider({ resource: resourceFromAttributes(options.resource), spanProcessors: [processor] });
    this.tracer = this.provider.getTracer('nereid');
  }

  /** The client's trace context, when its `traceparent` is well formed, with its `tracestate` (clientTraceState). */
  private clientContext(ingress: TraceIngress | undefined): Context {
    const root = this.api.ROOT_CONTEXT;
    const traceparent = ingress?.traceparent;
    const m = traceparent === undefined ? null : TRACEPARENT.exec(traceparent.trim().toLowerCase());
    if (!m || m[1] === 'ff' || /^0+$/.test(m[2]) || /^0+$/.test(m[3])) return root;
    const traceState = ingress?.tracestate ? this.clientTraceState(ingress.tracestate) : undefined;
    return this.api.trace.setSpanContext(root, { traceId: m[2], spanId: m[3], traceFlags: parseInt(m[4], 16), isRemote: true, traceState });
  }

  /**
   * The client's `tracestate` as Triton keeps it (opentelemetry-cpp's TraceState::FromHeader): all
   * of it, or none when a member is malformed or there are more than 32. OpenTelemetry JS's parse
   * keeps the well-formed members of a malformed list, and 32 of a longer one: what it
   * kept is counted against what was sent.
   */
  private clientTraceState(raw: string): TraceState | undefined {
    const members = raw.split(',').filter((m) => m.trim() !== '').length;
    const state = this.api.createTraceState(raw);
    const kept = state.serialize();
    return kept !== '' && kept.split(',').length === members ? state : undefined;
  }

  started(trace: CoreTrace): void {
    const attributes = {
      'triton.model_name': trace.modelName,
      'triton.model_version': trace.modelVersion,
      'triton.trace_id': trace.id,
      'triton.request_id': trace.requestId,
      ...(trace.parent ? { 'triton.trace_parent_id': trace.parent.id } : {}),
    };
    let parentContext: Context;
    let top: Span | undefined;
    const parentSpans = trace.parent?.spans as Spans | undefined;
    if (parentSpans) {
      parentContext = this.api.trace.setSpan(this.api.ROOT_CONTEXT, parentSpans.model);
    } else {
      top = this.tracer.startSpan('InferRequest', { startTime: epochMs(trace.ingress?.recvStart ?? performance.now()), attributes }, this.clientContext(trace.ingress));
      parentContext = this.api.trace.setSpan(this.api.ROOT_CONTEXT, top);
    }
    const model = this.tracer.startSpan(trace.modelName, { startTime: epochMs(performance.now()), attributes }, parentContext);
    const spans: Spans = { top, model };
    trace.spans = spans;
    trace.context = propagationHeaders(model);
  }

  finished(trace: CoreTrace): void {
    const spans = trace.spans as Spans | undefined;
    if (!spans) return;
    const computeStart = trace.timeOf('COMPUTE_START');
    if (computeStart !== undefined) {
      const compute = this.tracer.startSpan('compute', { startTime: epochMs(computeStart) }, this.api.trace.setSpan(this.api.ROOT_CONTEXT, spans.model));
      for (const m of trace.marks) if (COMPUTE_EVENTS.has(m.name)) compute.addEvent(m.name, epochMs(m.at));
      compute.end(epochMs(trace.timeOf('COMPUTE_END', true) ?? computeStart));
    }
    let last = 0;
    for (const m of trace.marks) {
      last = Math.max(last, m.at);
      if (COMPUTE_EVENTS.has(m.name)) continue;
      const span = TOP_EVENTS.has(m.name) && spans.top ? spans.top : spans.model;
      span.addEvent(m.name, epochMs(m.at));
    }
    spans.model.end(epochMs(trace.timeOf('REQUEST_END', true) ?? last));
    spans.top?.end(epochMs(last));
  }

  /** Exports what is queued and stops. */
  async close(): Promise<void> {
    await this.provider.shutdown();
  }
}

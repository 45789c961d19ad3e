/**
 * End-to-end: OpenTelemetry mode exports spans over OTLP/HTTP to a collector. The test starts its
 * own receiver (a plain node HTTP server taking POST /v1/traces, OTLP JSON as the exporter sends
 * it) and the built CLI (`npm run build` first: the OTLP exporter loads node's http with a dynamic
 * import, which Jest's sandbox refuses) with `--trace-config mode=opentelemetry`,
 * `--trace-config opentelemetry,url=...` and rate 0 (only requests that carry a client's trace
 * context are traced, as Triton documents); the spans continue the client's W3C `traceparent`
 * over HTTP (header) and gRPC (metadata): InferRequest → model span → compute span, and an
 * ensemble's step under its ensemble.
 */
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { call, inferenceClient, type Client } from './helpers/grpc-client';
import { attr, hex, startOtelServer, startOtlpReceiver, type OtelServer, type OtlpReceiver } from './helpers/otel-server';
import { waitFor } from './helpers/poll';
import { makeRepository, MODELS, postJson, ROOT } from './helpers/server';

const FIX = path.join(ROOT, 'test/fixtures/python');

describe('trace extension: OpenTelemetry export', () => {
  let receiver: OtlpReceiver;
  let server: OtelServer;
  let client: Client;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    const repo = makeRepository({
      simple: path.join(MODELS, 'simple'), slow_scale: path.join(FIX, 'slow_scale'), ensemble_flat: path.join(FIX, 'ensemble_flat'),
      bls_traced: path.join(FIX, 'bls_traced'), add_sub: path.join(MODELS, 'add_sub'),
    });
    server = await startOtelServer(repo, receiver.url, ['--trace-config', 'opentelemetry,resource=service.name=nereid-e2e']);
    client = inferenceClient(server.grpcPort);
  }, 60_000);
  afterAll(async () => {
    client?.close();
    await server?.stop();
    await receiver?.close();
  });

  it('shows the mode, without the Triton-only settings', async () => {
    const r = await fetch(`${server.http}/v2/trace/setting`);
    expect(await r.json()).toEqual({ trace_level: ['TIMESTAMPS'], trace_rate: '0', trace_count: '-1', trace_mode: 'opentelemetry' });
  });

  it("continues an HTTP client's traceparent: InferRequest, model and compute spans with Triton's timestamps", async () => {
    const traceId = hex(32);
    const clientSpan = hex(16);
    const r = await postJson(
      `${server.http}/v2/models/simple/infer`,
      {
        id: 'otel-http',
        inputs: [
          { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(3) },
          { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(1) },
        ],
      },
      { traceparent: `00-${traceId}-${clientSpan}-01` },
    );
    expect(r.status).toBe(200);
    const mine = () => receiver.spans.filter((s) => s.traceId === traceId);
    const spans = await waitFor('three spans', () => (mine().length >= 3 ? mine() : undefined));
    const top = spans.find((s) => s.name === 'InferRequest')!;
    const model = spans.find((s) => s.name === 'simple')!;
    const compute = spans.find((s) => s.name === 'compute')!;
    expect(top.parentSpanId).toBe(clientSpan);
    expect(model.parentSpanId).toBe(top.spanId);
    expect(compute.parentSpanId).toBe(model.spanId);
    expect(top.events!.map((e) => e.name)).toEqual(['HTTP_RECV_START', 'HTTP_RECV_END', 'HTTP_SEND_START', 'HTTP_SEND_END']);
    expect(model.events!.map((e) => e.name)).toEqual(['REQUEST_START', 'QUEUE_START', 'INFER_RESPONSE_COMPLETE', 'REQUEST_END']);
    expect(compute.events!.map((e) => e.name)).toEqual(['COMPUTE_START', 'COMPUTE_INPUT_END', 'COMPUTE_OUTPUT_START', 'COMPUTE_END']);
    expect(attr(model, 'triton.model_name')).toEqual({ stringValue: 'simple' });
    expect(attr(model, 'triton.request_id')).toEqual({ stringValue: 'otel-http' });
    expect(receiver.resources).toContainEqual(expect.objectContaining({ key: 'service.name', value: { stringValue: 'nereid-e2e' } }));
    expect(receiver.posts[0]).toMatch(/^POST \/v1\/traces application\/json/);
  });

  it("continues a gRPC client's traceparent (metadata); an ensemble's step is a child of the ensemble's span", async () => {
    const traceId = hex(32);
    const clientSpan = hex(16);
    const metadata = new grpc.Metadata();
    metadata.set('traceparent', `00-${traceId}-${clientSpan}-01`);
    const values = Float32Array.from([1, 2, 3, 4]);
    await call(client, 'ModelInfer', { model_name: 'ensemble_flat', id: 'otel-grpc', inputs: [{ name: 'IN', datatype: 'FP32', shape: [4] }], raw_input_contents: [Buffer.from(values.buffer)] }, metadata);
    const mine = () => receiver.spans.filter((s) => s.traceId === traceId);
    const spans = await waitFor('four spans', () => (mine().length >= 4 ? mine() : undefined));
    const top = spans.find((s) => s.name === 'InferRequest')!;
    const ensemble = spans.find((s) => s.name === 'ensemble_flat')!;
    const step = spans.find((s) => s.name === 'slow_scale')!;
    expect(top.parentSpanId).toBe(clientSpan);
    expect(top.events!.map((e) => e.name)).toEqual(['GRPC_WAITREAD_START', 'GRPC_WAITREAD_END', 'GRPC_SEND_START', 'GRPC_SEND_END']);
    expect(ensemble.parentSpanId).toBe(top.spanId);
    expect(step.parentSpanId).toBe(ensemble.spanId);
    expect(spans.filter((s) => s.name === 'compute').map((s) => s.parentSpanId)).toContain(step.spanId);
  });

  it("a BLS call given request.trace() is a model span under its caller's model span; one given no trace has none", async () => {
    const traceId = hex(32);
    const r = await postJson(
      `${server.http}/v2/models/bls_traced/infer`,
      {
        id: 'otel-bls',
        inputs: [
          { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [5, 6, 7, 8] },
          { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
        ],
      },
      { traceparent: `00-${traceId}-${hex(16)}-01` },
    );
    expect(r.status).toBe(200);
    const mine = () => receiver.spans.filter((s) => s.traceId === traceId);
    // InferRequest, bls_traced and its compute, and a model and compute span for each of the two traced BLS calls.
    const spans = await waitFor('seven spans', () => (mine().length >= 7 ? mine() : undefined));
    const top = spans.find((s) => s.name === 'InferRequest')!;
    const caller = spans.find((s) => s.name === 'bls_traced')!;
    expect(caller.parentSpanId).toBe(top.spanId);
    const children = spans.filter((s) => s.name === 'add_sub');
    expect(children.map((c) => attr(c, 'triton.request_id')?.stringValue).sort()).toEqual(['async-otel-bls', 'sync-otel-bls']);
    for (const c of children) {
      expect(c.parentSpanId).toBe(caller.spanId);
      expect(attr(c, 'triton.trace_parent_id')).toEqual(attr(caller, 'triton.trace_id'));
      expect(spans.some((s) => s.name === 'compute' && s.parentSpanId === c.spanId)).toBe(true);
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.spans.some((s) => attr(s, 'triton.request_id')?.stringValue === 'untraced-otel-bls')).toBe(false);
    expect(mine()).toHaveLength(7);
  });

  it('traces nothing without a client trace context at rate 0', async () => {
    const before = receiver.spans.length;
    await postJson(`${server.http}/v2/models/simple/infer`, {
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(3) },
        { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(1) },
      ],
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.spans.length).toBe(before);
  });
});

/**
 * End-to-end: a python model reads its request's trace context, `request.trace().get_context()`,
 * to continue the trace (Triton's python backend: the JSON text of the W3C headers of the
 * request's model span in OpenTelemetry mode, None otherwise). The `trace_context` fixture answers
 * with what it got. In OpenTelemetry mode (the built CLI exporting to a test collector, see
 * helpers/otel-server.ts) a request sent with a client's `traceparent` gets
 * `{"traceparent":"00-<the client's trace id>-<its model span's id>-01"}`, over HTTP and gRPC (an
 * ensemble's step: its own span's); one sent without is not traced (rate 0) and gets None. In
 * Triton mode a traced request gets None too (Triton's qa/L0_trace checks the same three cases).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { call, inferenceClient, type Client, type Msg } from './helpers/grpc-client';
import { hex, startOtelServer, startOtlpReceiver, type OtelServer, type OtlpReceiver } from './helpers/otel-server';
import { waitFor } from './helpers/poll';
import { makeRepository, postJson, ROOT, startTestServer } from './helpers/server';
import { recordsOf, traceEveryRequest } from './helpers/trace-files';

const MODEL = 'trace_context';
const body = { inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: [1] }] };

/** What the model answered over HTTP: whether get_context() was not None, and what it was ('' for None). */
async function contextOverHttp(base: string, headers: Record<string, string> = {}, model = MODEL): Promise<{ has: boolean; context: string }> {
  const r = await postJson(`${base}/v2/models/${model}/infer`, body, headers);
  expect(r.status).toBe(200);
  const out = new Map((r.body.outputs as Msg[]).map((o) => [o.name, o.data[0]]));
  return { has: out.get('HAS_CONTEXT') as boolean, context: out.get('CONTEXT') as string };
}

describe('python backend: request.trace().get_context()', () => {
  let repo: string;
  beforeAll(() => {
    repo = makeRepository({
      [MODEL]: path.join(ROOT, 'test/fixtures/python', MODEL),
      ensemble_trace_context: path.join(ROOT, 'test/fixtures/python/ensemble_trace_context'),
    });
  });

  describe('OpenTelemetry mode', () => {
    let receiver: OtlpReceiver;
    let server: OtelServer;
    let client: Client;

    beforeAll(async () => {
      receiver = await startOtlpReceiver();
      server = await startOtelServer(repo, receiver.url);
      client = inferenceClient(server.grpcPort);
    }, 60_000);
    afterAll(async () => {
      client?.close();
      await server?.stop();
      await receiver?.close();
    });

    /** The span of the model for the trace `traceId`, once exported. */
    const modelSpan = (traceId: string) =>
      waitFor('the model span', () => receiver.spans.find((s) => s.traceId === traceId && s.name === MODEL));

    it("is the W3C traceparent of the request's model span, in the client's trace (HTTP)", async () => {
      const traceId = hex(32);
      const clientSpan = hex(16);
      const { has, context } = await contextOverHttp(server.http, { traceparent: `00-${traceId}-${clientSpan}-01` });
      expect(has).toBe(true);
      const span = await modelSpan(traceId);
      expect(span.spanId).not.toBe(clientSpan);
      expect(JSON.parse(context)).toEqual({ traceparent: `00-${traceId}-${span.spanId}-01` });
    });

    it('is the same over gRPC (traceparent in the metadata)', async () => {
      const traceId = hex(32);
      const metadata = new grpc.Metadata();
      metadata.set('traceparent', `00-${traceId}-${hex(16)}-01`);
      const res = await call(client, 'ModelInfer', {
        model_name: MODEL, inputs: [{ name: 'IN', datatype: 'INT32', shape: [1] }], raw_input_contents: [Buffer.from(Int32Array.of(1).buffer)],
      }, metadata);
      const names = (res.outputs as Msg[]).map((o) => o.name);
      const raw = res.raw_output_contents as Buffer[];
      expect(raw[names.indexOf('HAS_CONTEXT')][0]).toBe(1);
      // A BYTES element on the wire: u32 LE length, then the bytes.
      const context = Buffer.from(raw[names.indexOf('CONTEXT')]).subarray(4).toString('utf8');
      const span = await modelSpan(traceId);
      expect(JSON.parse(context)).toEqual({ traceparent: `00-${traceId}-${span.spanId}-01` });
    });

    it("carries the client's tracestate on (HTTP and gRPC), none of it when a member is malformed (as Triton)", async () => {
      const state = 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7';
      const traceId = hex(32);
      const { context } = await contextOverHttp(server.http, { traceparent: `00-${traceId}-${hex(16)}-01`, tracestate: state });
      const span = await modelSpan(traceId);
      expect(JSON.parse(context)).toEqual({ traceparent: `00-${traceId}-${span.spanId}-01`, tracestate: state });
      // opentelemetry-cpp's TraceState::FromHeader, which Triton's propagator uses, drops the whole
      // list for one malformed member (OpenTelemetry JS would keep the others).
      const badId = hex(32);
      const bad = await contextOverHttp(server.http, { traceparent: `00-${badId}-${hex(16)}-01`, tracestate: `${state},not a member` });
      const badSpan = await modelSpan(badId);
      expect(JSON.parse(bad.context)).toEqual({ traceparent: `00-${badId}-${badSpan.spanId}-01` });

      const grpcTrace = hex(32);
      const metadata = new grpc.Metadata();
      metadata.set('traceparent', `00-${grpcTrace}-${hex(16)}-01`);
      metadata.set('tracestate', state);
      const res = await call(client, 'ModelInfer', {
        model_name: MODEL, inputs: [{ name: 'IN', datatype: 'INT32', shape: [1] }], raw_input_contents: [Buffer.from(Int32Array.of(1).buffer)],
      }, metadata);
      const names = (res.outputs as Msg[]).map((o) => o.name);
      const grpcContext = Buffer.from((res.raw_output_contents as Buffer[])[names.indexOf('CONTEXT')]).subarray(4).toString('utf8');
      const grpcSpan = await modelSpan(grpcTrace);
      expect(JSON.parse(grpcContext)).toEqual({ traceparent: `00-${grpcTrace}-${grpcSpan.spanId}-01`, tracestate: state });
    });

    it("is, for an ensemble's step, the step's own model span (a child of the ensemble's)", async () => {
      const traceId = hex(32);
      const { has, context } = await contextOverHttp(server.http, { traceparent: `00-${traceId}-${hex(16)}-01` }, 'ensemble_trace_context');
      expect(has).toBe(true);
      const step = await modelSpan(traceId);
      const ensemble = await waitFor('the ensemble span', () => receiver.spans.find((s) => s.traceId === traceId && s.name === 'ensemble_trace_context'));
      expect(step.parentSpanId).toBe(ensemble.spanId);
      expect(JSON.parse(context)).toEqual({ traceparent: `00-${traceId}-${step.spanId}-01` });
    });

    it('is None for a request that is not traced (no traceparent at rate 0)', async () => {
      expect(await contextOverHttp(server.http)).toEqual({ has: false, context: '' });
    });
  });

  describe('Triton mode', () => {
    let server: Awaited<ReturnType<typeof startTestServer>>;
    let dir: string;

    beforeAll(async () => {
      dir = mkdtempSync(path.join(tmpdir(), 'nereid-trace-context-'));
      server = await startTestServer({
        modelRepositories: [repo],
        trace: traceEveryRequest(dir),
      });
    }, 60_000);
    afterAll(() => server?.close());

    it('is None for a traced request, even one that sent a traceparent', async () => {
      expect(await contextOverHttp(server.http, { traceparent: `00-${hex(32)}-${hex(16)}-01` })).toEqual({ has: false, context: '' });
      // It was traced: its trace is in the trace file.
      await waitFor('its trace', () => recordsOf(dir, 'trace.json').find((r) => r.model_name === MODEL));
    });
  });
});

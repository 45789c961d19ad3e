/**
 * End-to-end: the Prometheus metrics on the metrics port after a known number of requests and
 * failures. Triton's counters equal the statistics extension's JSON exactly (durations as whole
 * µs), every histogram and summary counts every successful request, a python model's custom
 * counter, gauge and histogram show with the values it set and leave with the model, a stub
 * restart is counted, and nothing GPU is exported where there is no nvidia-smi.
 */
import * as path from 'node:path';
import { nvidiaSmiOnPath, parse, sample } from './helpers/exposition';
import { call, inferenceClient, openInferStream } from './helpers/grpc-client';
import { getJson, makeRepository, postJson, ROOT, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;
interface Duration {
  count: number;
  ns: number;
}

const FIX = path.join(ROOT, 'test/fixtures/python');

describe('metrics on the metrics port', () => {
  let server: Server;
  const scrape = async (): Promise<string> => (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
  const infer = (model: string, body: unknown) => postJson(`${server.http}/v2/models/${model}/infer`, body);
  const value = (v: number) => ({ inputs: [{ name: 'VALUE', datatype: 'FP32', shape: [1], data: [v] }] });
  const int32 = (name: string, batch: number) => ({ name, datatype: 'INT32', shape: [batch, 16], data: Array.from({ length: 16 * batch }, (_, i) => i) });
  const stats = async (model: string) => ((await getJson(`${server.http}/v2/models/${model}/stats`)).body as { model_stats: any[] }).model_stats[0];

  beforeAll(async () => {
    const repo = makeRepository({
      simple: 'models/simple',
      metric_kinds: path.join(FIX, 'metric_kinds'),
      custom_metrics: path.join(FIX, 'custom_metrics'),
      crash: path.join(FIX, 'crash'),
    });
    server = await startTestServer({
      modelRepositories: [repo],
      modelControlMode: 'explicit',
      loadModels: ['*'],
      metricsConfig: ['histogram_latencies=true', 'summary_latencies=true', 'summary_quantiles=0.5:0.05,0.99:0.001'],
    });
    // simple: 5 requests of batch 1 and 2 of batch 2 (9 inferences); metric_kinds: 4 successes, 2 failures.
    for (let i = 0; i < 5; i++) expect((await infer('simple', { inputs: [int32('INPUT0', 1), int32('INPUT1', 1)] })).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await infer('simple', { inputs: [int32('INPUT0', 2), int32('INPUT1', 2)] })).status).toBe(200);
    for (const v of [0.5, 3, -1, 7, -2, 20]) expect((await infer('metric_kinds', value(v))).status).toBe(v < 0 ? 500 : 200);
  }, 60_000);
  afterAll(() => server?.close());

  it.each(['simple', 'metric_kinds'])('%s: the nv_* counters equal the statistics JSON', async (model) => {
    const s = await stats(model);
    const is = s.inference_stats as Record<string, Duration>;
    const lines = parse(await scrape());
    const m = { model, version: '1' };
    const successes = model === 'simple' ? 7 : 4;
    const failures = model === 'simple' ? 0 : 2;
    expect(is.success.count).toBe(successes);
    expect(is.fail.count).toBe(failures);
    expect(sample(lines, 'nv_inference_request_success', m)).toBe(successes);
    expect(sample(lines, 'nv_inference_request_failure', { ...m, reason: 'BACKEND' })).toBe(failures);
    for (const reason of ['REJECTED', 'CANCELED', 'OTHER']) expect(sample(lines, 'nv_inference_request_failure', { ...m, reason })).toBe(0);
    expect(sample(lines, 'nv_inference_count', m)).toBe(s.inference_count);
    expect(s.inference_count).toBe(model === 'simple' ? 9 : 4);
    expect(sample(lines, 'nv_inference_exec_count', m)).toBe(s.execution_count);
    const us = (d: Duration) => Math.floor(d.ns / 1000);
    expect(sample(lines, 'nv_inference_request_duration_us', m)).toBe(us(is.success));
    expect(sample(lines, 'nv_inference_queue_duration_us', m)).toBe(us(is.queue));
    expect(sample(lines, 'nv_inference_compute_input_duration_us', m)).toBe(us(is.compute_input));
    expect(sample(lines, 'nv_inference_compute_infer_duration_us', m)).toBe(us(is.compute_infer));
    expect(sample(lines, 'nv_inference_compute_output_duration_us', m)).toBe(us(is.compute_output));
    expect(sample(lines, 'nv_inference_pending_request_count', m)).toBe(0);
    expect(sample(lines, 'nereid_inference_queue_depth', m)).toBe(0);
  });

  it.each(['simple', 'metric_kinds'])('%s: every histogram and summary counts every successful request', async (model) => {
    const s = await stats(model);
    const successes = s.inference_stats.success.count;
    const lines = parse(await scrape());
    const m = { model, version: '1' };
    for (const h of ['nereid_inference_request_duration_ms', 'nereid_inference_queue_duration_ms', 'nereid_inference_compute_duration_ms']) {
      expect(sample(lines, `${h}_count`, m)).toBe(successes);
      expect(sample(lines, `${h}_bucket`, { ...m, le: '+Inf' })).toBe(successes);
    }
    // Triton's first-response histogram is kept for decoupled models only (below).
    expect(lines.filter((l) => l.name.startsWith('nv_inference_first_response_histogram_ms') && l.labels.model === model)).toEqual([]);
    expect(sample(lines, 'nereid_inference_request_duration_ms_sum', m)).toBeCloseTo(s.inference_stats.success.ns / 1e6, 6);
    expect(sample(lines, 'nereid_inference_batch_size_count', m)).toBe(s.execution_count);
    // Every execution, of requests that failed too (the statistics' batch_stats count them alike).
    const executed = (s.batch_stats as { batch_size: number; compute_infer: Duration }[]).reduce((n, b) => n + b.batch_size * b.compute_infer.count, 0);
    expect(sample(lines, 'nereid_inference_batch_size_sum', m)).toBe(executed);
    for (const summary of ['request', 'queue', 'compute_input', 'compute_infer', 'compute_output']) {
      const name = `nv_inference_${summary}_summary_us`;
      expect(sample(lines, `${name}_count`, m)).toBe(successes);
      // The quantiles set with summary_quantiles, and only those.
      expect(lines.filter((l) => l.name === name && l.labels.model === model).map((l) => l.labels.quantile)).toEqual(['0.5', '0.99']);
    }
  });

  it("gRPC's ModelStatistics gives the same batch_stats as HTTP's", async () => {
    type Phase = { count: number | string; ns: number | string };
    type Batch = { batch_size: number | string; compute_input: Phase; compute_infer: Phase; compute_output: Phase };
    const phase = (p: Phase) => ({ count: Number(p.count), ns: Number(p.ns) });
    const same = (bs: Batch[]) =>
      bs.map((b) => ({ batch_size: Number(b.batch_size), compute_input: phase(b.compute_input), compute_infer: phase(b.compute_infer), compute_output: phase(b.compute_output) }));
    const httpStats = same((await stats('simple')).batch_stats);
    const client = inferenceClient(server.grpcPort);
    try {
      const grpcStats = same((await call(client, 'ModelStatistics', { name: 'simple', version: '1' })).model_stats[0].batch_stats);
      expect(httpStats.map((b) => b.batch_size).sort()).toEqual([1, 2]);
      expect(grpcStats).toEqual(httpStats);
    } finally {
      client.close();
    }
  });

  it("shows a python model's custom counter, gauge and histogram with the values it set", async () => {
    const r = await infer('metric_kinds', value(4));
    expect(r.status).toBe(200);
    const out = Object.fromEntries((r.body.outputs as { name: string; data: unknown[] }[]).map((o) => [o.name, o.data[0]]));
    // value() reads the server's value back: 7 requests so far, the gauge as last set.
    expect(out).toEqual({ COUNT: 7, GAUGE: 4, SET_ERROR: 'Failed to set metric value: TRITONSERVER_METRIC_KIND_COUNTER does not support Set' });
    const text = await scrape();
    expect(text).toContain('# HELP fixture_requests_total Requests the fixture received\n# TYPE fixture_requests_total counter\n');
    expect(text).toContain('fixture_requests_total{kind="counter",model="metric_kinds"} 7\n');
    expect(text).toContain('# TYPE fixture_last_value gauge\nfixture_last_value{model="metric_kinds"} 4\n');
    expect(text).toContain(
      [
        '# TYPE fixture_values histogram',
        'fixture_values_bucket{model="metric_kinds",le="1"} 1',
        'fixture_values_bucket{model="metric_kinds",le="5"} 3',
        'fixture_values_bucket{model="metric_kinds",le="10"} 4',
        'fixture_values_bucket{model="metric_kinds",le="+Inf"} 5',
        'fixture_values_sum{model="metric_kinds"} 34.5',
        'fixture_values_count{model="metric_kinds"} 5',
      ].join('\n'),
    );
  });

  it("serves Triton's custom_metrics example's counter (three instances, one family)", async () => {
    const fp32 = (name: string, data: number[]) => ({ name, datatype: 'FP32', shape: [4], data });
    for (let i = 0; i < 3; i++) {
      const r = await infer('custom_metrics', { inputs: [fp32('INPUT0', [1, 2, 3, 4]), fp32('INPUT1', [1, 1, 1, 1])] });
      expect(r.body.outputs[0].data).toEqual([2, 3, 4, 5]);
    }
    const text = await scrape();
    // The patterns Triton's examples/custom_metrics/client.py looks for.
    expect(text).toContain('# HELP requests_process_latency_ns Cumulative time spent processing requests');
    expect(text).toContain('# TYPE requests_process_latency_ns counter');
    const latency = sample(parse(text), 'requests_process_latency_ns', { model: 'custom_metrics', version: '1' });
    expect(latency).toBeGreaterThan(0);
  });

  it('counts a python stub restart', async () => {
    const r = await infer('crash', { inputs: [{ name: 'MODE', datatype: 'INT32', shape: [1], data: [1] }] });
    expect(r.status).not.toBe(200);
    expect(sample(parse(await scrape()), 'nereid_python_stub_restarts_total', { model: 'crash', version: '1' })).toBe(1);
  });

  it("drops a model's stub restarts when it unloads; a new load starts from none", async () => {
    expect((await postJson(`${server.http}/v2/repository/models/crash/unload`, {})).status).toBe(200);
    expect(await scrape()).not.toContain('model="crash"');
    expect((await postJson(`${server.http}/v2/repository/models/crash/load`, {})).status).toBe(200);
    const lines = parse(await scrape());
    expect(sample(lines, 'nv_inference_request_success', { model: 'crash', version: '1' })).toBe(0);
    expect(lines.filter((l) => l.name === 'nereid_python_stub_restarts_total' && l.labels.model === 'crash')).toEqual([]);
  }, 60_000);

  it('exports the CPU gauges, and nothing GPU where no nvidia-smi is on PATH', async () => {
    const lines = parse(await scrape());
    const util = sample(lines, 'nv_cpu_utilization', {});
    expect(util).toBeGreaterThanOrEqual(0);
    expect(util).toBeLessThanOrEqual(1);
    expect(sample(lines, 'nv_cpu_memory_total_bytes', {})).toBeGreaterThan(sample(lines, 'nv_cpu_memory_used_bytes', {}));
    // The GPU gauges read nvidia-smi (test/metrics-flags.e2e-spec.ts runs a fake one).
    if (!nvidiaSmiOnPath()) expect(lines.filter((l) => l.name.startsWith('nv_gpu') || l.name.startsWith('nv_energy'))).toEqual([]);
  });

  it("drops a model's series and its custom metrics when it unloads", async () => {
    const r = await postJson(`${server.http}/v2/repository/models/metric_kinds/unload`, {});
    expect(r.status).toBe(200);
    const text = await scrape();
    expect(text).not.toContain('fixture_');
    expect(text).not.toContain('model="metric_kinds"');
    expect(text).toContain('requests_process_latency_ns{model="custom_metrics",version="1"}');
  });
});

describe('metrics settings', () => {
  it('--metrics-config counter_latencies=false and nereid_histograms=false leave those families out', async () => {
    const server = await startTestServer({
      modelRepositories: [makeRepository({ simple: 'models/simple' })],
      metricsConfig: ['counter_latencies=false', 'nereid_histograms=false'],
      allowCpuMetrics: false,
    });
    try {
      const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
      expect(text).toContain('nv_inference_request_success{model="simple",version="1"} 0');
      expect(text).not.toContain('_duration_us');
      expect(text).not.toContain('nereid_');
      expect(text).not.toContain('nv_cpu_');
      expect(text).not.toContain('_summary_us');
    } finally {
      await server.close();
    }
  });

  it('--allow-metrics=false serves no metrics port; python models using custom metrics still run', async () => {
    const server = await startTestServer({ modelRepositories: [makeRepository({ metric_kinds: path.join(FIX, 'metric_kinds') })], allowMetrics: false });
    try {
      expect(server.metricsPort).toBe(-1);
      for (const v of [2, 3]) {
        const r = await postJson(`${server.http}/v2/models/metric_kinds/infer`, { inputs: [{ name: 'VALUE', datatype: 'FP32', shape: [1], data: [v] }] });
        expect(r.status).toBe(200);
        // value() reads what the model set, kept by its instance alone.
        expect(r.body.outputs.slice(0, 2).map((o: { data: number[] }) => o.data[0])).toEqual([v - 1, v]);
      }
    } finally {
      await server.close();
    }
  });
});

describe('response statistics of a decoupled model', () => {
  it('counts each response index: successes, the bare final flags as empty responses, over HTTP and gRPC alike', async () => {
    const server = await startTestServer({
      modelRepositories: [makeRepository({ decoupled_repeat: path.join(FIX, 'decoupled_repeat') })],
      metricsConfig: ['histogram_latencies=true'],
    });
    const client = inferenceClient(server.grpcPort);
    try {
      const int32 = (values: number[]) => Buffer.from(new Int32Array(values).buffer);
      const { stream, messages, done } = openInferStream(client);
      // Three responses then a bare final flag; two responses then a bare final flag.
      for (const values of [[5, 6, 7], [1, 2]]) {
        stream.write({ model_name: 'decoupled_repeat', inputs: [{ name: 'IN', datatype: 'INT32', shape: [values.length] }], raw_input_contents: [int32(values)] });
      }
      stream.end();
      await done;
      expect(messages.filter((m) => m.error_message === '')).toHaveLength(5);
      const stats = ((await getJson(`${server.http}/v2/models/decoupled_repeat/stats`)).body as { model_stats: any[] }).model_stats[0];
      const rs = stats.response_stats as Record<string, Record<string, Duration>>;
      const counts = Object.fromEntries(Object.entries(rs).map(([i, r]) => [i, Object.fromEntries(Object.entries(r).map(([k, d]) => [k, d.count]))]));
      const entry = (success: number, empty: number) => ({ compute_infer: success + empty, compute_output: success, success, fail: 0, empty_response: empty, cancel: 0 });
      expect(counts).toEqual({ '0': entry(2, 0), '1': entry(2, 0), '2': entry(1, 1), '3': entry(0, 1) });
      for (const r of Object.values(rs)) for (const d of Object.values(r)) expect(Number.isInteger(d.ns)).toBe(true);
      // A success lasts its infer and output time (indexes 0 and 1 had no empty response).
      for (const i of ['0', '1']) expect(rs[i].success.ns).toBe(rs[i].compute_infer.ns + rs[i].compute_output.ns);
      expect(rs['0'].success.ns).toBeGreaterThan(0);
      expect(rs['3'].success.ns).toBe(0);
      const grpcStats = await call(client, 'ModelStatistics', { name: 'decoupled_repeat' });
      const grpcCounts = grpcStats.model_stats[0].response_stats;
      expect(Object.keys(grpcCounts).sort()).toEqual(['0', '1', '2', '3']);
      expect(Number(grpcCounts['2'].empty_response.count)).toBe(1);
      expect(Number(grpcCounts['2'].success.ns)).toBe(rs['2'].success.ns);
      // A decoupled model has Triton's first-response histogram: one observation per request.
      const exposition = parse(await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text());
      expect(sample(exposition, 'nv_inference_first_response_histogram_ms_count', { model: 'decoupled_repeat', version: '1' })).toBe(2);
    } finally {
      client.close();
      await server.close();
    }
  });
});

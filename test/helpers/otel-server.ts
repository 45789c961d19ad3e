/**
 * For the OpenTelemetry end-to-end tests: a minimal OTLP/HTTP collector (a plain node HTTP server
 * taking POST /v1/traces, OTLP JSON as the exporter sends it), and the built CLI (`npm run build`
 * first: the OTLP exporter loads node's http with a dynamic import, which Jest's sandbox refuses)
 * serving a repository in OpenTelemetry mode at rate 0 (only requests that carry a client's trace
 * context are traced, as Triton documents), exporting to that collector.
 */
import { spawn } from 'node:child_process';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort, MAIN } from './built-server';
import type { Msg } from './grpc-client';
import { waitFor } from './poll';

export interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  events?: { name: string }[];
  attributes?: { key: string; value: Msg }[];
}

export interface OtlpReceiver {
  /** Where the exporter posts: `http://127.0.0.1:<port>/v1/traces`. */
  url: string;
  /** Every span of every post so far. */
  spans: Span[];
  /** `<method> <path> <content-type>` of each post. */
  posts: string[];
  /** The resource attributes of every post. */
  resources: Msg[];
  close(): Promise<void>;
}

export function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: Span[] = [];
  const resources: Msg[] = [];
  const posts: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Msg;
      for (const rs of body.resourceSpans ?? []) {
        resources.push(...(rs.resource?.attributes ?? []));
        for (const ss of rs.scopeSpans ?? []) spans.push(...(ss.spans as Span[]));
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({ url: `http://127.0.0.1:${port}/v1/traces`, spans, posts, resources, close: () => new Promise((r) => server.close(() => r())) });
    }),
  );
}

export interface OtelServer {
  /** `http://127.0.0.1:<port>` */
  http: string;
  grpcPort: number;
  /** SIGTERM, and waits for the exit (the exporter flushes on the way out). */
  stop(): Promise<void>;
}

/** The built CLI serving `repo` in OpenTelemetry mode (level TIMESTAMPS, rate 0), exporting to `collectorUrl` every 50 ms. */
export async function startOtelServer(repo: string, collectorUrl: string, extraArgs: string[] = []): Promise<OtelServer> {
  const [httpPort, grpcPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
  const child = spawn(process.execPath, [
    MAIN, 'serve', '--model-repository', repo,
    '--http-address', '127.0.0.1', '--grpc-address', '127.0.0.1',
    '--http-port', String(httpPort), '--grpc-port', String(grpcPort), '--metrics-port', String(metricsPort),
    '--log-info', 'false',
    '--trace-config', 'mode=opentelemetry', '--trace-config', 'level=TIMESTAMPS', '--trace-config', 'rate=0',
    '--trace-config', `opentelemetry,url=${collectorUrl}`, '--trace-config', 'opentelemetry,bsp_schedule_delay=50',
    ...extraArgs,
  ], { stdio: ['ignore', 'inherit', 'inherit'] });
  const server = {
    http: `http://127.0.0.1:${httpPort}`,
    grpcPort,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
  await waitFor('the server to be ready', async () => {
    if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}): run 'npm run build' first`);
    const r = await fetch(`${server.http}/v2/health/ready`).catch(() => undefined);
    return r?.status === 200 ? true : undefined;
  }, 1600);
  return server;
}

/** A span's attribute value, e.g. `{ stringValue: 'simple' }`. */
export const attr = (s: Span, key: string): Msg | undefined => s.attributes?.find((a) => a.key === key)?.value;

/** `n` random lowercase hex digits (trace and span ids). */
export const hex = (n: number): string => Array.from({ length: n }, () => Math.floor(Math.random() * 16).toString(16)).join('');

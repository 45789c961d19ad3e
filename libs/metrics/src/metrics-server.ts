import * as http from 'node:http';
import type { InferenceCore, ModelRepositoryManager } from '@nereid/core';
import { renderMetrics, type ModelMetricsSample } from './prometheus';

/** Samples of every READY model version. */
export function collectSamples(manager: ModelRepositoryManager, pending: (key: string) => number): ModelMetricsSample[] {
  const out: ModelMetricsSample[] = [];
  for (const entry of manager.all()) {
    for (const v of entry.versions.values()) {
      const rt = v.runtime;
      if (v.state !== 'READY' || !rt) continue;
      const s = rt.stats;
      out.push({
        model: entry.name,
        version: String(v.version),
        tags: rt.config.metric_tags ?? {},
        success: s.success.count,
        failures: s.failuresByReason,
        inferenceCount: s.inferenceCount,
        execCount: s.executionCount,
        pending: pending(rt.key),
        // Triton adds a request's duration to this counter when it succeeds only.
        requestNs: s.success.ns,
        queueNs: s.queue.ns,
        computeInputNs: s.computeInput.ns,
        computeInferNs: s.computeInfer.ns,
        computeOutputNs: s.computeOutput.ns,
        loadSecs: rt.loadSecs,
      });
    }
  }
  return out.sort((a, b) => a.model.localeCompare(b.model) || Number(a.version) - Number(b.version));
}

export interface MetricsServerOptions {
  host: string;
  port: number;
  pending?: (key: string) => number;
}

/** Serves `/metrics` in Prometheus text format. */
export async function startMetricsServer(
  _core: InferenceCore,
  manager: ModelRepositoryManager,
  options: MetricsServerOptions,
): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found');
      return;
    }
    const body = renderMetrics(collectSamples(manager, options.pending ?? (() => 0)));
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

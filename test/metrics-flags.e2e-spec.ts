/**
 * End-to-end: the metrics port's command-line flags, parsed as `nereid serve` parses them.
 * `--metrics-address` binds the metrics port there and nowhere else, `--metrics-interval-ms` is
 * the period at which the CPU gauges are refreshed, and `--allow-gpu-metrics` is accepted (this
 * machine has no GPU: no nv_gpu_* family shows).
 */
import { parseServeArgs } from '../apps/nereid/src/cli-parser';
import { parse, sample, type Line } from './helpers/exposition';
import { sleep } from './helpers/poll';
import { makeRepository, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

/** A server started from `nereid serve` flags (ports chosen by the system, logs quiet). */
async function serve(...flags: string[]): Promise<Server> {
  const args = ['--model-repository', makeRepository({}), '--http-address', '127.0.0.1', '--grpc-address', '127.0.0.1', ...flags];
  return startTestServer({ ...parseServeArgs(args), httpPort: 0, grpcPort: 0, metricsPort: 0, logInfo: false, logWarning: false, logError: false });
}

const scrape = async (host: string, port: number): Promise<Line[]> => parse(await (await fetch(`http://${host}:${port}/metrics`)).text());

/** The distinct (utilization, used memory) pairs the CPU gauges showed, scraped every 50 ms for `ms`. */
async function cpuReadings(server: Server, ms: number): Promise<number> {
  const seen = new Set<string>();
  for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) {
    const lines = await scrape('127.0.0.1', server.metricsPort);
    seen.add(`${sample(lines, 'nv_cpu_utilization', {})} ${sample(lines, 'nv_cpu_memory_used_bytes', {})}`);
  }
  return seen.size;
}

describe('metrics flags', () => {
  it('--metrics-address binds the metrics port to that address only; --allow-gpu-metrics is accepted', async () => {
    expect(parseServeArgs(['--model-repository', 'm', '--allow-gpu-metrics', 'false']).allowGpuMetrics).toBe(false);
    const server = await serve('--metrics-address', '127.0.0.2', '--allow-gpu-metrics=true');
    try {
      const lines = await scrape('127.0.0.2', server.metricsPort);
      expect(sample(lines, 'nv_cpu_memory_total_bytes', {})).toBeGreaterThan(0);
      // No GPU on this machine: nothing GPU is exported, and nothing fails.
      expect(lines.filter((l) => l.name.startsWith('nv_gpu_') || l.name === 'nv_energy_consumption')).toEqual([]);
      await expect(fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).rejects.toThrow();
      // The HTTP port stays on --http-address.
      expect((await fetch(`${server.http}/v2/health/live`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('--metrics-interval-ms sets how often the CPU gauges are refreshed', async () => {
    const fast = await serve('--metrics-interval-ms', '100');
    const slow = await serve('--metrics-interval-ms=60000');
    try {
      const [fastReadings, slowReadings] = await Promise.all([cpuReadings(fast, 1200), cpuReadings(slow, 1200)]);
      // About 12 refreshes in 1.2 s at 100 ms (a busy machine delays some); none at 60 s.
      expect(fastReadings).toBeGreaterThanOrEqual(4);
      expect(slowReadings).toBe(1);
    } finally {
      await Promise.all([fast.close(), slow.close()]);
    }
  });
});

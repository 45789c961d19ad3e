/**
 * End-to-end: the metrics port's command-line flags, parsed as `nereid serve` parses them.
 * `--metrics-address` binds the metrics port there and nowhere else, `--metrics-interval-ms` is
 * the period at which the CPU gauges are refreshed, and `--allow-gpu-metrics` is accepted.
 *
 * The GPU gauges are read from nvidia-smi. This machine has no GPU: the GPU tests put a fake
 * `nvidia-smi` (a shell script that prints two GPUs) first on PATH, and check what the server made
 * of its output, and that `--allow-gpu-metrics=false` never runs it.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseServeArgs } from '../apps/nereid/src/cli-parser';
import { nvidiaSmiOnPath, parse, sample, type Line } from './helpers/exposition';
import { sleep, until } from './helpers/poll';
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
      // Without an nvidia-smi on PATH (this machine's case), nothing GPU is exported, and nothing fails.
      if (!nvidiaSmiOnPath()) expect(lines.filter((l) => l.name.startsWith('nv_gpu_') || l.name === 'nv_energy_consumption')).toEqual([]);
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

describe('GPU metrics from nvidia-smi (a fake one: no GPU on this machine)', () => {
  let dir: string;
  let path0: string | undefined;
  beforeAll(() => {
    // Each run counts itself in `runs` and records its arguments; GPU-a's energy grows 2 J a run.
    dir = mkdtempSync(path.join(tmpdir(), 'nereid-fake-nvidia-smi-'));
    writeFileSync(
      path.join(dir, 'nvidia-smi'),
      [
        '#!/bin/sh',
        `d='${dir}'`,
        'n=$(cat "$d/runs" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$d/runs"',
        'echo "$@" > "$d/args"',
        'echo "GPU-11111111-aaaa, 37, 81559, 1024, 71.25, 700.00, $((1000000 + n * 2000))"',
        'echo "GPU-22222222-bbbb, 0, 81559, 0, [N/A], 700.00, [N/A]"',
        '',
      ].join('\n'),
    );
    chmodSync(path.join(dir, 'nvidia-smi'), 0o755);
    path0 = process.env.PATH;
    process.env.PATH = `${dir}${path.delimiter}${path0 ?? ''}`;
  });
  afterAll(() => {
    process.env.PATH = path0;
  });
  const runs = (): number => (existsSync(path.join(dir, 'runs')) ? Number(readFileSync(path.join(dir, 'runs'), 'utf8')) : 0);

  it("exports Triton's nv_gpu_* gauges and nv_energy_consumption per gpu_uuid, polled every --metrics-interval-ms", async () => {
    const server = await serve('--metrics-interval-ms', '100');
    try {
      await until('three nvidia-smi runs', () => runs() >= 3, 5_000);
      expect(readFileSync(path.join(dir, 'args'), 'utf8').trim()).toBe(
        '--query-gpu=uuid,utilization.gpu,memory.total,memory.used,power.draw,power.limit,total_energy_consumption --format=csv,noheader,nounits',
      );
      const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
      expect(text).toContain('# HELP nv_gpu_utilization GPU utilization rate [0.0 - 1.0)\n# TYPE nv_gpu_utilization gauge\n');
      expect(text).toContain('# HELP nv_energy_consumption GPU energy consumption in joules since the Triton Server started\n# TYPE nv_energy_consumption counter\n');
      const lines = parse(text);
      const a = { gpu_uuid: 'GPU-11111111-aaaa' };
      const b = { gpu_uuid: 'GPU-22222222-bbbb' };
      expect(sample(lines, 'nv_gpu_utilization', a)).toBe(0.37);
      expect(sample(lines, 'nv_gpu_memory_total_bytes', a)).toBe(81559 * 1024 * 1024);
      expect(sample(lines, 'nv_gpu_memory_used_bytes', a)).toBe(1024 * 1024 * 1024);
      expect(sample(lines, 'nv_gpu_power_usage', a)).toBe(71.25);
      expect(sample(lines, 'nv_gpu_power_limit', a)).toBe(700);
      // 2 J a run since the first reading: a whole, even, non-zero number of joules.
      const joules = sample(lines, 'nv_energy_consumption', a);
      expect(joules).toBeGreaterThanOrEqual(2);
      expect(joules % 2).toBe(0);
      // What the tool could not give is 0, as Triton does.
      expect([sample(lines, 'nv_gpu_power_usage', b), sample(lines, 'nv_energy_consumption', b)]).toEqual([0, 0]);
      // Labels: gpu_uuid only.
      for (const l of lines.filter((x) => x.name.startsWith('nv_gpu_') || x.name === 'nv_energy_consumption')) expect(Object.keys(l.labels)).toEqual(['gpu_uuid']);
    } finally {
      await server.close();
    }
  });

  it('--allow-gpu-metrics=false never runs nvidia-smi and exports nothing GPU', async () => {
    const before = runs();
    const server = await serve('--metrics-interval-ms', '50', '--allow-gpu-metrics=false');
    try {
      await sleep(300);
      const lines = await scrape('127.0.0.1', server.metricsPort);
      expect(lines.filter((l) => l.name.startsWith('nv_gpu_') || l.name === 'nv_energy_consumption')).toEqual([]);
      expect(runs()).toBe(before);
    } finally {
      await server.close();
    }
  });
});

import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Registry } from 'prom-client';
import { GPU_FAIL_THRESHOLD, GpuMetrics, parseNvidiaSmi } from './gpu-metrics';

describe('parseNvidiaSmi', () => {
  it("reads one GPU a line, what the tool cannot give as undefined", () => {
    const text = 'GPU-a, 37, 81559, 1024, 71.25, 700.00, 123456\nGPU-b, 0, 16384, 0, [N/A], [Not Supported], [N/A]\n\nnot a gpu line\n';
    expect(parseNvidiaSmi(text)).toEqual([
      { uuid: 'GPU-a', utilization: 37, memoryTotal: 81559, memoryUsed: 1024, powerDraw: 71.25, powerLimit: 700, energy: 123456 },
      { uuid: 'GPU-b', utilization: 0, memoryTotal: 16384, memoryUsed: 0, powerDraw: undefined, powerLimit: undefined, energy: undefined },
    ]);
  });
});

describe('GpuMetrics', () => {
  const lines = async (registry: Registry) => (await registry.metrics()).split('\n').filter((l) => l.startsWith('nv_'));

  it("exports Triton's GPU families per gpu_uuid, energy in joules since the first reading", async () => {
    const registry = new Registry();
    const energy = [5_000_000, 5_002_500, 5_010_000];
    let call = 0;
    const gpu = new GpuMetrics(registry, async () => `GPU-a, 37, 100, 25, 71.25, 700, ${energy[call++]}\nGPU-b, 1, 100, 0, [N/A], 300, [N/A]\n`);
    for (let i = 0; i < 3; i++) await gpu.poll();
    expect(await lines(registry)).toEqual([
      'nv_gpu_utilization{gpu_uuid="GPU-a"} 0.37',
      'nv_gpu_utilization{gpu_uuid="GPU-b"} 0.01',
      `nv_gpu_memory_total_bytes{gpu_uuid="GPU-a"} ${100 * 1024 * 1024}`,
      `nv_gpu_memory_total_bytes{gpu_uuid="GPU-b"} ${100 * 1024 * 1024}`,
      `nv_gpu_memory_used_bytes{gpu_uuid="GPU-a"} ${25 * 1024 * 1024}`,
      'nv_gpu_memory_used_bytes{gpu_uuid="GPU-b"} 0',
      'nv_gpu_power_usage{gpu_uuid="GPU-a"} 71.25',
      'nv_gpu_power_usage{gpu_uuid="GPU-b"} 0',
      'nv_gpu_power_limit{gpu_uuid="GPU-a"} 700',
      'nv_gpu_power_limit{gpu_uuid="GPU-b"} 300',
      'nv_energy_consumption{gpu_uuid="GPU-a"} 10',
      'nv_energy_consumption{gpu_uuid="GPU-b"} 0',
    ]);
    expect(await registry.metrics()).toContain('# HELP nv_gpu_utilization GPU utilization rate [0.0 - 1.0)\n# TYPE nv_gpu_utilization gauge\n');
    expect(await registry.metrics()).toContain('# TYPE nv_energy_consumption counter\n');
  });

  it('registers nothing, and stops asking, where there is no nvidia-smi', async () => {
    const registry = new Registry();
    let calls = 0;
    const gpu = new GpuMetrics(registry, async () => {
      calls++;
      throw Object.assign(new Error('spawn nvidia-smi ENOENT'), { code: 'ENOENT' });
    });
    await gpu.poll();
    await gpu.poll();
    expect(calls).toBe(1);
    expect(await registry.metrics()).toBe('\n');
  });

  it('gives up after GPU_FAIL_THRESHOLD readings failed in a row (as Triton stops polling a failing field); a good one in between resets the count', async () => {
    const registry = new Registry();
    const results = [false, false, true, false, false, false, true];
    let calls = 0;
    const gpu = new GpuMetrics(registry, async () => {
      if (!results[calls++]) throw Object.assign(new Error('NVIDIA-SMI has failed'), { code: 9 });
      return 'GPU-a, 50, 1, 1, 1, 1, 1\n';
    });
    for (let i = 0; i < results.length; i++) await gpu.poll();
    expect(GPU_FAIL_THRESHOLD).toBe(3);
    expect(calls).toBe(6);
    // The last values stay exported.
    expect(await lines(registry)).toContain('nv_gpu_utilization{gpu_uuid="GPU-a"} 0.5');
  });

  it('keeps the last values when a reading fails', async () => {
    const registry = new Registry();
    let fail = false;
    const gpu = new GpuMetrics(registry, async () => {
      if (fail) throw Object.assign(new Error('exit 9'), { code: 9 });
      return 'GPU-a, 50, 1, 1, 1, 1, 1\n';
    });
    await gpu.poll();
    fail = true;
    await gpu.poll();
    expect(await lines(registry)).toContain('nv_gpu_utilization{gpu_uuid="GPU-a"} 0.5');
  });
});

describe('GpuMetrics with a real nvidia-smi process', () => {
  const dirs: string[] = [];
  const pids: number[] = [];
  const path0 = process.env.PATH;
  afterEach(() => {
    process.env.PATH = path0;
    for (const pid of pids.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const alive = (pid: number): boolean => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  it('kills a reading still running when it stops (shutdown leaves no nvidia-smi behind)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'nereid-gpu-'));
    dirs.push(dir);
    const pidFile = path.join(dir, 'pid');
    // A hanging nvidia-smi: notes its pid, then sleeps (exec: the pid is the sleeping process's).
    writeFileSync(path.join(dir, 'nvidia-smi'), `#!/bin/sh\necho $$ > ${pidFile}\nexec sleep 30\n`, { mode: 0o755 });
    process.env.PATH = `${dir}${path.delimiter}${path0}`;
    const gpu = new GpuMetrics(new Registry());
    gpu.start(60_000);
    const started = Date.now();
    while (!existsSync(pidFile) || readFileSync(pidFile, 'utf8').trim() === '') {
      if (Date.now() - started > 5_000) throw new Error('the fake nvidia-smi did not start');
      await new Promise((r) => setTimeout(r, 20));
    }
    const pid = Number(readFileSync(pidFile, 'utf8'));
    pids.push(pid);
    expect(alive(pid)).toBe(true);
    gpu.stop();
    const stopped = Date.now();
    while (alive(pid) && Date.now() - stopped < 2_000) await new Promise((r) => setTimeout(r, 20));
    expect(alive(pid)).toBe(false);
  });
});

import { execFile } from 'node:child_process';
import { Counter, Gauge, type Registry } from 'prom-client';

/** What `nvidia-smi` is asked, one line per GPU (the fields in this order). */
export const NVIDIA_SMI_ARGS: readonly string[] = [
  '--query-gpu=uuid,utilization.gpu,memory.total,memory.used,power.draw,power.limit,total_energy_consumption',
  '--format=csv,noheader,nounits',
];

/** One GPU's reading, in nvidia-smi's units; undefined where it said `[N/A]` or `[Not Supported]`. */
export interface GpuReading {
  uuid: string;
  /** Percent. */
  utilization?: number;
  /** MiB. */
  memoryTotal?: number;
  /** MiB. */
  memoryUsed?: number;
  /** Watts. */
  powerDraw?: number;
  /** Watts. */
  powerLimit?: number;
  /** Millijoules since the driver loaded. */
  energy?: number;
}

const MIB = 1024 * 1024;

/** The readings of `nvidia-smi --query-gpu=... --format=csv,noheader,nounits`; lines that are not one GPU's are skipped. */
export function parseNvidiaSmi(text: string): GpuReading[] {
  const out: GpuReading[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(',').map((s) => s.trim());
    if (f.length !== 7 || f[0] === '') continue;
    const num = (s: string): number | undefined => (s !== '' && Number.isFinite(Number(s)) ? Number(s) : undefined);
    out.push({ uuid: f[0], utilization: num(f[1]), memoryTotal: num(f[2]), memoryUsed: num(f[3]), powerDraw: num(f[4]), powerLimit: num(f[5]), energy: num(f[6]) });
  }
  return out;
}

/**
 * Runs nvidia-smi: its output, or an error (`code` ENOENT when there is none on PATH). `signal`
 * aborted: the reading is given up and the process killed.
 */
export type NvidiaSmi = (signal: AbortSignal) => Promise<string>;

/**
 * Readings that fail in a row (an error exit, a timeout) before the poller gives up for good, as
 * Triton stops polling a DCGM field after 3 failures in a row (metrics.h `fail_threshold_`): a
 * broken driver costs a few runs of nvidia-smi, not one every interval forever.
 */
export const GPU_FAIL_THRESHOLD = 3;

/** The longest a reading may take; the process is killed then (a hung driver call). */
const READ_TIMEOUT_MS = 10_000;

const runNvidiaSmi: NvidiaSmi = (signal) =>
  new Promise((resolve, reject) => {
    // PATH read when asked (env given explicitly: the lookup uses this process's PATH as it is now).
    execFile(
      'nvidia-smi',
      NVIDIA_SMI_ARGS,
      { env: process.env, timeout: READ_TIMEOUT_MS, killSignal: 'SIGKILL', signal, windowsHide: true },
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    );
  });

interface GpuFamilies {
  utilization: Gauge;
  memoryTotal: Gauge;
  memoryUsed: Gauge;
  powerUsage: Gauge;
  powerLimit: Gauge;
  energy: Counter;
}

/**
 * Triton's GPU families (label `gpu_uuid`, help texts of Triton's metrics.cc), read from
 * `nvidia-smi` every `--metrics-interval-ms` (`--allow-gpu-metrics`, default true) where Triton
 * reads DCGM. Without an nvidia-smi on PATH nothing is exported and nothing is logged: the
 * families are registered at the first reading that names a GPU. As Triton: utilization as a
 * ratio, memory in bytes, a value the tool cannot give is 0, and `nv_energy_consumption` counts
 * the joules since the first reading.
 */
export class GpuMetrics {
  private families?: GpuFamilies;
  private readonly lastEnergy = new Map<string, number>();
  private timer?: NodeJS.Timeout;
  /** The reading running now: stop() aborts it (no nvidia-smi outlives the server). */
  private reading?: AbortController;
  private gone = false;
  /** Readings failed since the last good one. */
  private failures = 0;

  constructor(
    private readonly registry: Registry,
    private readonly nvidiaSmi: NvidiaSmi = runNvidiaSmi,
  ) {}

  /** Polls now and then every `intervalMs`, until stop(), or until nvidia-smi proves absent or keeps failing. */
  start(intervalMs: number): void {
    this.stop();
    if (this.gone) return;
    void this.poll();
    this.timer = setInterval(() => void this.poll(), Math.max(1, intervalMs));
    this.timer.unref();
  }

  /** Stops polling, and kills the reading running now if any. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.reading?.abort();
  }

  /** One reading (skipped while the last one still runs). */
  async poll(): Promise<void> {
    if (this.reading !== undefined || this.gone) return;
    const reading = (this.reading = new AbortController());
    try {
      const text = await this.nvidiaSmi(reading.signal);
      if (!reading.signal.aborted) this.record(parseNvidiaSmi(text));
      this.failures = 0;
    } catch (e) {
      // No nvidia-smi: no GPU metrics, for good. Any other failure (a driver hiccup) keeps the last
      // values, until GPU_FAIL_THRESHOLD in a row: then the poller gives up (a stop() is no failure).
      if (!reading.signal.aborted && ((e as NodeJS.ErrnoException).code === 'ENOENT' || ++this.failures >= GPU_FAIL_THRESHOLD)) {
        this.gone = true;
        this.stop();
      }
    } finally {
      if (this.reading === reading) this.reading = undefined;
    }
  }

  private record(readings: GpuReading[]): void {
    if (readings.length === 0) return;
    const f = (this.families ??= this.register());
    for (const r of readings) {
      const labels = { gpu_uuid: r.uuid };
      f.utilization.set(labels, (r.utilization ?? 0) * 0.01);
      f.memoryTotal.set(labels, (r.memoryTotal ?? 0) * MIB);
      f.memoryUsed.set(labels, (r.memoryUsed ?? 0) * MIB);
      f.powerUsage.set(labels, r.powerDraw ?? 0);
      f.powerLimit.set(labels, r.powerLimit ?? 0);
      let joules = 0;
      if (r.energy !== undefined) {
        const last = this.lastEnergy.get(r.uuid);
        if (last !== undefined) joules = Math.max(0, r.energy - last) * 0.001;
        this.lastEnergy.set(r.uuid, r.energy);
      }
      f.energy.inc(labels, joules);
    }
  }

  private register(): GpuFamilies {
    const registers = [this.registry];
    const labelNames = ['gpu_uuid'];
    const gauge = (name: string, help: string) => new Gauge({ name, help, labelNames, registers });
    return {
      utilization: gauge('nv_gpu_utilization', 'GPU utilization rate [0.0 - 1.0)'),
      memoryTotal: gauge('nv_gpu_memory_total_bytes', 'GPU total memory, in bytes'),
      memoryUsed: gauge('nv_gpu_memory_used_bytes', 'GPU used memory, in bytes'),
      powerUsage: gauge('nv_gpu_power_usage', 'GPU power usage in watts'),
      powerLimit: gauge('nv_gpu_power_limit', 'GPU power management limit in watts'),
      energy: new Counter({ name: 'nv_energy_consumption', help: 'GPU energy consumption in joules since the Triton Server started', labelNames, registers }),
    };
  }
}

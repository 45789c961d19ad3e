import { readFileSync } from 'node:fs';
import * as os from 'node:os';
import { Gauge, type Registry } from 'prom-client';

interface CpuTimes {
  busy: number;
  total: number;
}

/** Whole-machine CPU time from /proc/stat (Linux), else from os.cpus(). */
function cpuTimes(): CpuTimes {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
    // cpu user nice system idle iowait irq softirq steal ...
    const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
    const idle = (f[3] ?? 0) + (f[4] ?? 0);
    const total = f.reduce((a, b) => a + b, 0);
    return { busy: total - idle, total };
  } catch {
    let busy = 0;
    let total = 0;
    for (const c of os.cpus()) {
      const t = c.times.user + c.times.nice + c.times.sys + c.times.idle + c.times.irq;
      busy += t - c.times.idle;
      total += t;
    }
    return { busy, total };
  }
}

/** Total and used RAM: MemTotal - MemAvailable from /proc/meminfo (what Triton reports), else os. */
function memory(): { total: number; used: number } {
  try {
    const text = readFileSync('/proc/meminfo', 'utf8');
    const kb = (key: string): number | undefined => {
      const m = new RegExp(`^${key}:\\s+(\\d+)\\s*kB`, 'm').exec(text);
      return m ? Number(m[1]) * 1024 : undefined;
    };
    const total = kb('MemTotal');
    const available = kb('MemAvailable');
    if (total !== undefined && available !== undefined) return { total, used: total - available };
  } catch {
    /* not Linux */
  }
  return { total: os.totalmem(), used: os.totalmem() - os.freemem() };
}

/**
 * Triton's CPU gauges, polled every `--metrics-interval-ms`: utilisation over the last interval
 * across all cores [0.0 - 1.0], total and used memory in bytes.
 */
export class CpuMetrics {
  private readonly utilization: Gauge;
  private readonly total: Gauge;
  private readonly used: Gauge;
  private last = cpuTimes();
  private timer?: NodeJS.Timeout;

  constructor(registry: Registry) {
    this.utilization = new Gauge({ name: 'nv_cpu_utilization', help: 'CPU utilization rate [0.0 - 1.0]', registers: [registry] });
    this.total = new Gauge({ name: 'nv_cpu_memory_total_bytes', help: 'CPU total memory (RAM), in bytes', registers: [registry] });
    this.used = new Gauge({ name: 'nv_cpu_memory_used_bytes', help: 'CPU used memory (RAM), in bytes', registers: [registry] });
    this.poll();
  }

  /** Polls now and then every `intervalMs`. */
  start(intervalMs: number): void {
    this.stop();
    this.timer = setInterval(() => this.poll(), Math.max(1, intervalMs));
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  poll(): void {
    const now = cpuTimes();
    const total = now.total - this.last.total;
    if (total > 0) this.utilization.set((now.busy - this.last.busy) / total);
    this.last = now;
    const m = memory();
    this.total.set(m.total);
    this.used.set(m.used);
  }
}

import { promises as fs } from 'node:fs';

/**
 * Memory a model instance took when it loaded, as Triton's statistics extension reports it
 * (`memory_usage`: "the memory usage detected during model loading"): a memory type (`CPU`,
 * `CPU_PINNED`, `GPU`), a device id and a size in bytes.
 */
export interface MemoryUsage {
  type: 'CPU' | 'CPU_PINNED' | 'GPU';
  id: number;
  byteSize: number;
}

/** Loads measured by `measureRssGrowth` run one at a time, so that one's growth is not another's. */
let measuring: Promise<unknown> = Promise.resolve();

/**
 * Runs `load` and measures how much this process's resident memory grew meanwhile (bytes, never
 * below 0: a garbage collection during the load can shrink it). Measured loads run one after
 * another, so two sessions opening together are not both counted twice; anything else the process
 * does meanwhile (requests, other backends) still counts, so the figure is an estimate, as RSS
 * growth always is.
 */
export function measureRssGrowth<T>(load: () => Promise<T>): Promise<{ value: T; bytes: number }> {
  const run = measuring.then(async () => {
    const before = process.memoryUsage.rss();
    const value = await load();
    return { value, bytes: Math.max(0, process.memoryUsage.rss() - before) };
  });
  measuring = run.catch(() => undefined);
  return run;
}

/**
 * Resident memory of another process (`VmRSS` in /proc/<pid>/status), in bytes; undefined where
 * it cannot be read (the process is gone, no /proc).
 */
export async function processRssBytes(pid: number): Promise<number | undefined> {
  let text: string;
  try {
    text = await fs.readFile(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  return vmRssBytes(text);
}

/** `VmRSS:   12345 kB` of a /proc/<pid>/status text, in bytes. */
export function vmRssBytes(status: string): number | undefined {
  const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  return m ? Number(m[1]) * 1024 : undefined;
}

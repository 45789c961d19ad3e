import { spawn } from 'node:child_process';
import { measureRssGrowth, processRssBytes, vmRssBytes } from './memory-usage';

describe('memory usage of loads', () => {
  it('measures the growth of this process while a load runs, never below zero', async () => {
    // 64 MiB touched page by page: resident, not only reserved. RSS is the whole jest worker's, where
    // memory freed meanwhile (a collection of an earlier test's garbage) offsets the growth: a CI run
    // measured 31 of the 64 MiB once, so the growth must show in one of three tries.
    // The buffers are kept until the end: one freed during a later try would offset that try.
    const grown: number[] = [];
    const kept: Buffer[] = [];
    for (let i = 0; i < 3 && !grown.some((b) => b >= 48 * 1024 * 1024); i++) {
      const { value, bytes } = await measureRssGrowth(async () => Buffer.alloc(64 * 1024 * 1024, 1));
      expect(value.length).toBe(64 * 1024 * 1024);
      kept.push(value);
      grown.push(bytes);
    }
    expect(Math.max(...grown)).toBeGreaterThanOrEqual(48 * 1024 * 1024);
    const none = await measureRssGrowth(async () => 1);
    expect(none.bytes).toBeGreaterThanOrEqual(0);
    expect(none.bytes).toBeLessThan(8 * 1024 * 1024);
  });

  it('runs measured loads one after another, so two loads are not both counted in each other', async () => {
    const order: string[] = [];
    const slow = (name: string) => async () => {
      order.push(`${name} start`);
      await new Promise((r) => setTimeout(r, 20));
      order.push(`${name} end`);
    };
    await Promise.all([measureRssGrowth(slow('a')), measureRssGrowth(slow('b'))]);
    expect(order).toEqual(['a start', 'a end', 'b start', 'b end']);
  });

  it('keeps measuring after a load fails, and passes the failure on', async () => {
    await expect(measureRssGrowth(async () => Promise.reject(new Error('no session')))).rejects.toThrow('no session');
    await expect(measureRssGrowth(async () => 'ok')).resolves.toMatchObject({ value: 'ok' });
  });

  it("reads another process's resident memory from /proc, and nothing for a process that is gone", async () => {
    // A process that holds 32 MiB it has written to, then says so.
    const script = "globalThis.b = Buffer.alloc(32 * 1024 * 1024, 1); process.stdout.write('ready'); setTimeout(() => {}, 10000)";
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      await new Promise((r) => child.stdout.once('data', r));
      const rss = await processRssBytes(child.pid!);
      expect(rss).toBeGreaterThan(32 * 1024 * 1024);
      expect(rss).toBeLessThan(1024 * 1024 * 1024);
    } finally {
      child.kill();
      await new Promise((r) => child.once('exit', r));
    }
    expect(await processRssBytes(child.pid!)).toBeUndefined();
    expect(vmRssBytes('Name:\tx\nVmRSS:\t    2048 kB\nVmData: 1 kB\n')).toBe(2048 * 1024);
    expect(vmRssBytes('Name:\tkthread\n')).toBeUndefined();
  });
});

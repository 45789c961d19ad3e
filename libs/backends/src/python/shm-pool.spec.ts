import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ShmPool } from './shm-pool';

describe('ShmPool', () => {
  let dir: string;
  let pool: ShmPool;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'nereid-pool-'));
    pool = new ShmPool(dir, 'x-');
  });
  afterEach(() => {
    pool.closeAll();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes the bytes into a file under its prefix', async () => {
    const { path: file, written } = pool.write(Uint8Array.from([1, 2, 3]));
    await written;
    expect(path.dirname(file)).toBe(dir);
    expect(path.basename(file).startsWith('x-')).toBe(true);
    expect([...readFileSync(file)]).toEqual([1, 2, 3]);
  });

  it('never hands out a file the stub still holds, and reuses it once released', async () => {
    const a = pool.write(new Uint8Array(100));
    const b = pool.write(new Uint8Array(100));
    await Promise.all([a.written, b.written]);
    expect(b.path).not.toBe(a.path);
    pool.release([a.path]);
    const c = pool.write(new Uint8Array(50).fill(7));
    await c.written;
    expect(c.path).toBe(a.path);
    expect([...readFileSync(c.path).subarray(0, 50)]).toEqual(new Array(50).fill(7));
  });

  it('prefers the smallest released file that fits', async () => {
    const small = pool.write(new Uint8Array(10));
    const large = pool.write(new Uint8Array(1000));
    await Promise.all([small.written, large.written]);
    pool.release([large.path, small.path]);
    const next = pool.write(new Uint8Array(500));
    await next.written;
    expect(next.path).toBe(large.path);
    const tiny = pool.write(new Uint8Array(5));
    expect(tiny.path).toBe(small.path);
    await tiny.written;
  });

  it('keeps a bounded number of free files and deletes the rest', async () => {
    const files = Array.from({ length: 6 }, () => pool.write(new Uint8Array(8)));
    await Promise.all(files.map((f) => f.written));
    pool.release(files.map((f) => f.path));
    await new Promise((r) => setTimeout(r, 50));
    expect(files.filter((f) => existsSync(f.path)).length).toBe(2);
  });

  it('ignores releases of unknown paths', () => {
    expect(() => pool.release(['/nowhere/x-n99'])).not.toThrow();
  });
});

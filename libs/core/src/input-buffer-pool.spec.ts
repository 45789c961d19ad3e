import { InputBufferPool } from './input-buffer-pool';

describe('InputBufferPool', () => {
  it('hands a released store back for a size it fits (up to twice as large), not for a larger one', () => {
    const pool = new InputBufferPool();
    const a = pool.acquire(1000);
    expect(a.byteLength).toBe(1000);
    pool.release(a);
    const b = pool.acquire(600);
    expect(b.buffer).toBe(a.buffer);
    expect(b.byteLength).toBe(600);
    pool.release(b);
    expect(pool.acquire(1001).buffer).not.toBe(a.buffer);
    expect(pool.acquire(400).buffer).not.toBe(a.buffer); // 1000 > 2 x 400: not pinned by a small input
  });

  it('keeps at most maxFree stores and maxFreeBytes in all, the largest first; a store is kept once', () => {
    const pool = new InputBufferPool(2, 1 << 20, 3000);
    const stores = [pool.acquire(1000), pool.acquire(1500), pool.acquire(2000)];
    for (const s of stores) pool.release(s);
    pool.release(stores[2]);
    // 2000 + 1500 > 3000: only the largest that fits the byte budget stays.
    expect(pool.acquire(2000).buffer).toBe(stores[2].buffer);
    expect(pool.acquire(1500).buffer).not.toBe(stores[1].buffer);
    const huge = pool.acquire(2 << 20);
    pool.release(huge);
    expect(pool.acquire(2 << 20).buffer).not.toBe(huge.buffer); // over maxBytes: never kept
  });
});

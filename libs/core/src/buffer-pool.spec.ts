import { BufferPool } from './buffer-pool';

describe('BufferPool', () => {
  it('hands a released store back for a size it fits (up to twice as large), not for a larger one', () => {
    const pool = new BufferPool();
    const a = pool.acquire(1000);
    expect(a.byteLength).toBe(1000);
    pool.release(a);
    const b = pool.acquire(600);
    expect(b.buffer).toBe(a.buffer);
    expect(b.byteLength).toBe(600);
    expect(pool.freeCount).toBe(0);
    pool.release(b);
    expect(pool.acquire(1001).buffer).not.toBe(a.buffer);
    expect(pool.acquire(400).buffer).not.toBe(a.buffer); // 1000 > 2 x 400: not pinned by a small request
  });

  it('gives each acquirer its own store while they are in use', () => {
    const pool = new BufferPool();
    const a = pool.acquire(100);
    pool.release(a);
    const b = pool.acquire(100);
    const c = pool.acquire(100);
    expect(b.buffer).toBe(a.buffer);
    expect(c.buffer).not.toBe(a.buffer);
  });

  it('keeps at most maxFree stores (the largest), none above maxBytes, and a store once', () => {
    const pool = new BufferPool(2, 10_000);
    const bufs = [pool.acquire(100), pool.acquire(200), pool.acquire(300), pool.acquire(20_000)];
    for (const b of bufs) pool.release(b);
    expect(pool.freeCount).toBe(2);
    expect(pool.acquire(300).buffer).toBe(bufs[2].buffer);
    expect(pool.acquire(200).buffer).toBe(bufs[1].buffer);
    pool.release(bufs[1]);
    pool.release(bufs[1]);
    expect(pool.freeCount).toBe(1);
  });

  it('keeps no more than maxFreeBytes in all, the smallest dropped first', () => {
    const pool = new BufferPool(2, 1 << 20, 3000);
    const stores = [pool.acquire(1000), pool.acquire(1500), pool.acquire(2000)];
    for (const s of stores) pool.release(s);
    // 2000 + 1500 > 3000: only the largest that fits the byte budget stays.
    expect(pool.freeCount).toBe(1);
    expect(pool.acquire(2000).buffer).toBe(stores[2].buffer);
    expect(pool.acquire(1500).buffer).not.toBe(stores[1].buffer);
  });

  it('keeps enough stores for several large requests in flight by default', () => {
    const pool = new BufferPool();
    const bufs = Array.from({ length: 4 }, () => pool.acquire(4 << 20));
    for (const b of bufs) pool.release(b);
    expect(pool.freeCount).toBe(4);
  });
});

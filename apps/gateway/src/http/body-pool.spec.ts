import { BodyBufferPool } from './body-pool';

describe('BodyBufferPool', () => {
  it('hands a released buffer to the next request of a fitting size', () => {
    const pool = new BodyBufferPool();
    const a = pool.acquire(1000);
    expect(a.length).toBe(1000);
    pool.release(a);
    expect(pool.acquire(900)).toBe(a);
    expect(pool.freeCount).toBe(0);
  });

  it('never hands out a buffer that is too small, or more than twice the size asked', () => {
    const pool = new BodyBufferPool();
    const big = pool.acquire(4096);
    pool.release(big);
    expect(pool.acquire(5000)).not.toBe(big);
    expect(pool.acquire(1000)).not.toBe(big);
    expect(pool.acquire(2048)).toBe(big);
  });

  it('gives each acquirer its own buffer while they are in use', () => {
    const pool = new BodyBufferPool();
    const a = pool.acquire(100);
    pool.release(a);
    const b = pool.acquire(100);
    const c = pool.acquire(100);
    expect(b).toBe(a);
    expect(c).not.toBe(a);
  });

  it('keeps at most maxFree buffers (the largest) and none above maxBytes', () => {
    const pool = new BodyBufferPool(2, 10_000);
    const bufs = [pool.acquire(100), pool.acquire(200), pool.acquire(300), pool.acquire(20_000)];
    for (const b of bufs) pool.release(b);
    expect(pool.freeCount).toBe(2);
    expect(pool.acquire(300)).toBe(bufs[2]);
    expect(pool.acquire(200)).toBe(bufs[1]);
    pool.release(bufs[1]);
    pool.release(bufs[1]);
    expect(pool.freeCount).toBe(1);
  });

  it('keeps no more than maxFreeBytes in all, dropping the largest first', () => {
    const pool = new BodyBufferPool(8, 10_000, 1000);
    const bufs = [pool.acquire(400), pool.acquire(300), pool.acquire(500)];
    for (const b of bufs) pool.release(b);
    expect(pool.freeCount).toBe(2);
    expect(pool.acquire(500)).not.toBe(bufs[2]);
    expect(pool.acquire(400)).toBe(bufs[0]);
    expect(pool.acquire(300)).toBe(bufs[1]);
  });

  it('keeps enough buffers for several large requests in flight by default', () => {
    const pool = new BodyBufferPool();
    const bufs = Array.from({ length: 4 }, () => pool.acquire(4 << 20));
    for (const b of bufs) pool.release(b);
    expect(pool.freeCount).toBe(4);
  });
});

import { isReclaimable, markReclaimable, RECLAIM_MIN_BYTES, reclaimStorage, retainStorage } from './reclaim';

const big = (): Float32Array => new Float32Array(RECLAIM_MIN_BYTES / 4).fill(1.5);

describe('reclaimable tensor storage', () => {
  it('frees a marked buffer at once: its views read as empty, and it is freed only once', () => {
    const data = big();
    markReclaimable(data);
    expect(isReclaimable(data)).toBe(true);
    expect(reclaimStorage(data)).toBe(true);
    expect(data.length).toBe(0);
    expect(data.buffer.byteLength).toBe(0);
    expect(reclaimStorage(data)).toBe(false);
  });

  it('never touches storage that was not marked', () => {
    const data = big();
    expect(reclaimStorage(data)).toBe(false);
    expect(data.length).toBe(RECLAIM_MIN_BYTES / 4);
    expect(data[7]).toBe(1.5);
  });

  it('does not mark a view over part of a buffer (a batch slice, a pooled body) nor a small buffer', () => {
    const whole = new Uint8Array(RECLAIM_MIN_BYTES * 2);
    const part = whole.subarray(0, RECLAIM_MIN_BYTES);
    markReclaimable(part);
    expect(isReclaimable(part)).toBe(false);
    expect(reclaimStorage(part)).toBe(false);
    expect(whole.length).toBe(RECLAIM_MIN_BYTES * 2);
    const small = new Float32Array(16);
    markReclaimable(small);
    expect(isReclaimable(small)).toBe(false);
  });

  it('does not mark shared memory or byte strings', () => {
    const shared = new Uint8Array(new SharedArrayBuffer(RECLAIM_MIN_BYTES));
    markReclaimable(shared);
    expect(isReclaimable(shared)).toBe(false);
    const strings = [new Uint8Array(RECLAIM_MIN_BYTES)];
    markReclaimable(strings);
    expect(isReclaimable(strings)).toBe(false);
    expect(reclaimStorage(strings)).toBe(false);
    expect(strings[0].length).toBe(RECLAIM_MIN_BYTES);
  });

  it('keeps storage someone retained (a sequence state) even though it was marked', () => {
    const data = big();
    markReclaimable(data);
    retainStorage(data);
    expect(reclaimStorage(data)).toBe(false);
    expect(data[0]).toBe(1.5);
  });
});

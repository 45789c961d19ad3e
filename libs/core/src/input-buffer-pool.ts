/**
 * Backing stores of input tensors read from regions, reused from one request to the next. A fresh
 * 16 MiB buffer per request costs a page fault per 4 KiB before a byte is read, and V8 counts it
 * towards its next full collection; on the shared benchmark machine a fresh 16 MiB read took
 * 200-500 ms against ~10 ms into a reused buffer (bench/RESULTS.md, shared memory). Like the HTTP
 * body pool (apps/gateway/src/http/body-pool.ts): a few buffers, bounded in count and bytes.
 */
export class InputBufferPool {
  private readonly free: ArrayBuffer[] = [];

  constructor(
    private readonly maxFree = 8,
    private readonly maxBytes = 64 * 1024 * 1024,
    private readonly maxFreeBytes = 256 * 1024 * 1024,
  ) {}

  /** `size` bytes over a store of at most twice that (contents: whatever the last user left). */
  acquire(size: number): Uint8Array {
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const length = this.free[i].byteLength;
      if (length >= size && length <= size * 2 && (best === -1 || length < this.free[best].byteLength)) best = i;
    }
    const store = best === -1 ? Buffer.allocUnsafeSlow(size).buffer : this.free.splice(best, 1)[0];
    return new Uint8Array(store, 0, size);
  }

  release(view: Uint8Array): void {
    const store = view.buffer as ArrayBuffer;
    if (store.byteLength > this.maxBytes || store.byteLength === 0 || this.free.includes(store)) return;
    this.free.push(store);
    let total = 0;
    for (const b of this.free) total += b.byteLength;
    while (this.free.length > this.maxFree || total > this.maxFreeBytes) {
      // The smallest go first: the largest serve every smaller input up to half their size.
      this.free.sort((a, b) => b.byteLength - a.byteLength);
      total -= this.free.pop()!.byteLength;
    }
  }
}

/**
 * Backing stores of large buffers, reused from one request to the next: HTTP request bodies
 * (apps/gateway/src/http/infer-fast-path.ts) and input tensors read from shared-memory regions.
 *
 * A fresh Buffer of many megabytes per request is costly twice over in Node: V8 counts it as
 * external memory and starts a full mark-compact of the server's heap every 64 MiB of such
 * allocations, and its pages are faulted in one by one on first touch. Measured (bench/RESULTS.md):
 * a 16 MiB tensor through a python identity model took ~60 ms of server CPU per request with a
 * fresh body buffer against ~20 ms with a reused one, nearly all of the difference being the GC;
 * a fresh 16 MiB shared-memory read took 200-500 ms against ~10 ms into a reused buffer.
 *
 * A buffer goes back to the pool only when nothing can read it any more.
 */
export class BufferPool {
  private readonly free: ArrayBuffer[] = [];

  constructor(
    /**
     * Stores kept while unused. Enough for the requests a busy server has in flight: with 4
     * concurrent 4 MiB requests and 2 kept, half the requests got a fresh buffer and the server
     * ran a mark-compact every 4 requests.
     */
    private readonly maxFree = 8,
    /** Larger stores are not kept. */
    private readonly maxBytes = 64 * 1024 * 1024,
    /** At most this many bytes are kept in all (like Triton's 256 MB pinned memory pool). */
    private readonly maxFreeBytes = 256 * 1024 * 1024,
  ) {}

  /** `size` bytes over a store of at most twice that (contents: whatever the last user left). */
  acquire(size: number): Buffer {
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const length = this.free[i].byteLength;
      // Not more than twice the size: a small request must not pin a huge store.
      if (length >= size && length <= size * 2 && (best === -1 || length < this.free[best].byteLength)) best = i;
    }
    const store = best === -1 ? Buffer.allocUnsafeSlow(size).buffer : this.free.splice(best, 1)[0];
    return Buffer.from(store, 0, size);
  }

  /** Hands back a buffer from `acquire` (or any view over its store). */
  release(view: Uint8Array): void {
    const store = view.buffer as ArrayBuffer;
    if (store.byteLength > this.maxBytes || store.byteLength === 0 || this.free.includes(store)) return;
    this.free.push(store);
    let total = 0;
    for (const b of this.free) total += b.byteLength;
    while (this.free.length > this.maxFree || total > this.maxFreeBytes) {
      // The smallest go first: the largest serve every smaller request down to half their size.
      this.free.sort((a, b) => b.byteLength - a.byteLength);
      total -= this.free.pop()!.byteLength;
    }
  }

  get freeCount(): number {
    return this.free.length;
  }
}

/**
 * Buffers for large request bodies, reused from one request to the next.
 *
 * A fresh Buffer of many megabytes per request is costly twice over in Node: V8 counts it as
 * external memory and starts a full mark-compact of the server's heap every 64 MiB of such
 * allocations, and its pages are faulted in one by one on first touch. Measured with a 16 MiB
 * tensor through a python identity model (bench/RESULTS.md): server CPU per request went from
 * ~60 ms to ~20 ms once the body buffer was reused, nearly all of the difference being the GC.
 *
 * A buffer goes back to the pool only when nothing can read it any more: the caller releases it
 * after the response is written and the model has finished with the request.
 */
export class BodyBufferPool {
  private readonly free: Buffer[] = [];

  constructor(
    /**
     * Buffers kept while unused (each as large as the largest body it served). Enough for the
     * requests a busy server has in flight: with 4 concurrent 4 MiB requests and 2 kept, half the
     * requests got a fresh buffer and the server ran a mark-compact every 4 requests.
     */
    private readonly maxFree = 8,
    /** Larger buffers are not kept. */
    private readonly maxBytes = 64 * 1024 * 1024,
    /** At most this many bytes are kept in all (like Triton's 256 MB pinned memory pool). */
    private readonly maxFreeBytes = 256 * 1024 * 1024,
  ) {}

  /** A buffer of at least `size` bytes (its contents are whatever the last user left). */
  acquire(size: number): Buffer {
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const length = this.free[i].length;
      // Not more than twice the size: a small body must not pin a huge buffer.
      if (length >= size && length <= size * 2 && (best === -1 || length < this.free[best].length)) best = i;
    }
    if (best === -1) return Buffer.allocUnsafeSlow(size);
    return this.free.splice(best, 1)[0];
  }

  /** Hands a buffer from `acquire` back. */
  release(buffer: Buffer): void {
    if (buffer.length > this.maxBytes || this.free.includes(buffer)) return;
    this.free.push(buffer);
    if (this.free.length > this.maxFree) {
      // Keep the largest ones: they serve every smaller body up to half their size.
      this.free.sort((a, b) => b.length - a.length);
      this.free.length = this.maxFree;
    }
    let total = 0;
    for (const b of this.free) total += b.length;
    if (total <= this.maxFreeBytes) return;
    // Over the byte budget: the largest go first.
    this.free.sort((a, b) => b.length - a.length);
    while (total > this.maxFreeBytes) total -= this.free.shift()!.length;
  }

  get freeCount(): number {
    return this.free.length;
  }
}

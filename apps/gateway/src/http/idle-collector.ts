import * as v8 from 'node:v8';
import * as vm from 'node:vm';

/**
 * One full garbage collection once a burst of buffer garbage is over, so that its memory goes back
 * to the allocator (and, with an allocator that returns freed memory, to the system).
 *
 * V8 frees an ArrayBuffer's memory only when a collection finds it unreachable, and it collects on
 * heap pressure: after a burst (64 gzip bombs refused at the body budget, a flood of large bodies)
 * tens of megabytes of refused bodies, inflated chunks and socket reads stayed allocated for as long
 * as the server then stayed idle, since an idle server allocates nothing that would start a
 * collection (bench/RESULTS.md, bench/attack-load). Every `intervalMs` this samples V8's heap and
 * the external memory JS objects hold; when they are `thresholdBytes` or more above what the last collection
 * left and barely moved since the previous sample (the burst is over, nothing is allocating), it
 * collects once. A server under steady load never qualifies (its buffers move between samples), and
 * one collection resets the mark, so a quiet server is collected at most once per burst.
 */
export class IdleCollector {
  private timer: ReturnType<typeof setInterval> | undefined;
  /** The sample after the last collection (or at start). */
  private floor: number;
  private previous = -1;
  /** Collections run so far. */
  collections = 0;

  constructor(
    private readonly options: {
      /** Growth over the floor that makes a quiet server worth a collection. */
      thresholdBytes: number;
      intervalMs: number;
      /** Bytes a collection may free, now (default: V8's heap used plus the external memory JS objects hold). */
      sample?: () => number;
      /** A full collection (default: V8's gc(), made reachable once). */
      collect?: () => void;
    },
  ) {
    this.floor = this.sample();
  }

  start(): this {
    this.timer ??= setInterval(() => this.tick(), this.options.intervalMs);
    // Never what keeps the process alive.
    this.timer.unref();
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One sample (the timer's work; tests call it directly). True when it collected. */
  tick(): boolean {
    const now = this.sample();
    // Light traffic (a health probe, a metrics scrape) moves it a little; a burst moves it a lot.
    const quiet = Math.abs(now - this.previous) <= this.options.thresholdBytes / 16;
    this.previous = now;
    if (now < this.floor) this.floor = now;
    if (!quiet || now - this.floor < this.options.thresholdBytes) return false;
    (this.options.collect ?? fullGc())();
    this.collections++;
    this.floor = this.sample();
    this.previous = this.floor;
    return true;
  }

  private sample(): number {
    if (this.options.sample) return this.options.sample();
    // What a collection may free: the JS heap (closed sockets, parsers) and the memory outside it
    // that JS objects hold (array buffers: bodies, inflated chunks, socket reads).
    const m = process.memoryUsage();
    return m.heapUsed + m.external;
  }
}

let gc: (() => void) | undefined;

/** V8's full collection: `global.gc` when node runs with --expose-gc, else exposed once here. */
function fullGc(): () => void {
  if (gc === undefined) {
    const exposed = (globalThis as { gc?: () => void }).gc;
    if (typeof exposed === 'function') gc = exposed;
    else {
      // The flag applies to contexts created after it: the new context's gc() collects the whole heap.
      v8.setFlagsFromString('--expose-gc');
      gc = vm.runInNewContext('gc') as () => void;
    }
  }
  return gc;
}

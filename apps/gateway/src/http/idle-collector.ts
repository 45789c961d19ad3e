import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { loadNativeAddon } from '@nereid/core';

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
 *
 * glibc keeps most of what the collection frees: it returns memory to the system on free() only
 * from the top of its heap, and live allocations made after the burst pin that top. So after the
 * collection this calls `malloc_trim(0)` (native/malloc-trim), which returns the free pages inside the
 * heap; it costs tens of ms per hundred MB returned (bench/RESULTS.md, bench/attack-load). It runs at
 * a later sample, not at once (V8 frees the collected array buffers' memory on a background thread,
 * and a trim right after gc() found most of it not yet freed in some runs), and only on an idle
 * server: quiet by the sample above and using under a tenth of a core, for three samples in a row
 * (a server between bursts a second apart keeps its buffers: a trim hands them back and the next
 * burst faults them in again). The CPU test matters: tensors in client shared memory or onnxruntime's own buffers move RSS but not V8's
 * counts, and a trim under such load handed back buffers that the next request faulted in again
 * (1.4x server CPU per 16 MiB request when it trimmed every second). V8 may also have collected the
 * burst's garbage itself, leaving nothing for a collection to do but the freed memory in glibc: so an
 * idle server whose RSS grew `thresholdBytes` past what it was after the last trim is trimmed without a
 * collection (a trim that returns nothing costs <1 ms and resets that mark). Without the addon (no C
 * toolchain at build time) the collection runs alone.
 */
export class IdleCollector {
  private timer: ReturnType<typeof setInterval> | undefined;
  /** The sample after the last collection (or at start). */
  private floor: number;
  private previous = -1;
  private readonly trim: (() => boolean) | undefined;
  /** A collection ran: trim at the first idle sample, unless a burst starts again first. */
  private trimDue = false;
  /** The process's CPU time (ms) at the end of the previous sample. */
  private cpuMark: number;
  /** Samples in a row that found the server idle (quiet, under a tenth of a core). */
  private idleSamples = 0;
  /** RSS after the last trim (or at start, or the lowest since). */
  private rssFloor: number;
  /** Collections run so far. */
  collections = 0;
  /** Trims run so far, and how long the last one took (ms). */
  trims = 0;
  lastTrimMs = 0;
  /** Samples that threw (EMFILE reading /proc) and were skipped. */
  failedSamples = 0;

  constructor(
    private readonly options: {
      /** Growth over the floor that makes a quiet server worth a collection. */
      thresholdBytes: number;
      intervalMs: number;
      /** Bytes a collection may free, now (default: V8's heap used plus the external memory JS objects hold). */
      sample?: () => number;
      /** A full collection (default: V8's gc(), made reachable once). */
      collect?: () => void;
      /**
       * Returns the allocator's free memory to the system after a collection; true when some went back
       * (default: native/malloc-trim's `trim()` when built, else none; null: none).
       */
      trim?: (() => boolean) | null;
      /** The process's resident memory, bytes (default: process.memoryUsage.rss()). */
      rss?: () => number;
      /** The CPU time the process (all its threads) has used, ms (default: process.cpuUsage()). */
      cpuMs?: () => number;
    },
  ) {
    this.floor = this.sample();
    this.trim = options.trim === undefined ? defaultTrim() : (options.trim ?? undefined);
    this.rssFloor = this.trim ? this.rss() : 0;
    this.cpuMark = this.cpuMs();
  }

  start(): this {
    this.timer ??= setInterval(() => this.safeTick(), this.options.intervalMs);
    // Never what keeps the process alive.
    this.timer.unref();
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * The timer's tick, which never throws: a timer callback that throws ends the process. Sampling
   * reads /proc (process.memoryUsage() opens /proc/self/status): with every descriptor taken it
   * threw EMFILE, and 1,100 silent connections to the gRPC port killed node this way (issue 16).
   * A sample that fails is skipped; the next one starts over.
   */
  safeTick(): boolean {
    try {
      return this.tick();
    } catch {
      this.failedSamples++;
      this.previous = -1;
      return false;
    }
  }

  /** One sample (the timer's work; tests call it directly). True when it collected (the trim follows at the next one). */
  tick(): boolean {
    const now = this.sample();
    // Light traffic (a health probe, a metrics scrape) moves it a little; a burst moves it a lot.
    const quiet = Math.abs(now - this.previous) <= this.options.thresholdBytes / 16;
    this.previous = now;
    if (now < this.floor) this.floor = now;
    // The server's own CPU since the previous sample (this class's collection and trim excluded).
    const idle = quiet && this.cpuMs() - this.cpuMark < this.options.intervalMs * IDLE_CPU_FRACTION;
    this.idleSamples = idle ? this.idleSamples + 1 : 0;
    try {
      if (!quiet) {
        // A burst again: the memory the trim would return is about to be reused.
        this.trimDue = false;
        return false;
      }
      if (now - this.floor >= this.options.thresholdBytes) {
        (this.options.collect ?? fullGc())();
        this.collections++;
        this.trimDue = this.trim !== undefined;
        this.floor = this.sample();
        this.previous = this.floor;
        return true;
      }
      if (this.trim && this.idleSamples >= TRIM_AFTER_IDLE_SAMPLES) {
        const rss = this.rss();
        if (rss < this.rssFloor) this.rssFloor = rss;
        // Garbage V8 collected by itself leaves glibc's free memory behind just the same.
        if (this.trimDue || rss - this.rssFloor >= this.options.thresholdBytes) this.trimNow();
      }
      return false;
    } finally {
      this.cpuMark = this.cpuMs();
    }
  }

  /** Gives the allocator's free pages back (what the last collection freed is there by now). */
  private trimNow(): void {
    const started = performance.now();
    this.trim!();
    this.lastTrimMs = performance.now() - started;
    this.trims++;
    this.trimDue = false;
    this.rssFloor = this.rss();
  }

  private cpuMs(): number {
    if (this.options.cpuMs) return this.options.cpuMs();
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  }

  private rss(): number {
    return this.options.rss ? this.options.rss() : process.memoryUsage.rss();
  }

  private sample(): number {
    if (this.options.sample) return this.options.sample();
    // What a collection may free: the JS heap (closed sockets, parsers) and the memory outside it
    // that JS objects hold (array buffers: bodies, inflated chunks, socket reads).
    const m = process.memoryUsage();
    return m.heapUsed + m.external;
  }
}

/**
 * The share of one core under which a server counts as idle for a trim: an idle Nereid uses ~1%
 * (timers, the metrics poller); one serving requests, tens of %.
 */
const IDLE_CPU_FRACTION = 0.1;
/** Idle samples in a row before a trim. */
const TRIM_AFTER_IDLE_SAMPLES = 3;

/** native/malloc-trim's trim(), or undefined where it was not built. */
function defaultTrim(): (() => boolean) | undefined {
  const addon = loadNativeAddon<{ trim(): boolean }>('malloc-trim');
  return addon && (() => addon.trim());
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

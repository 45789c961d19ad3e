import { performance } from 'node:perf_hooks';
import type { Clock } from './types';

/**
 * The real clock: `performance.now()` and Node timers. The timers are unref'd: a scheduler's queue
 * delay, queue timeout or sequence idle timer matters only while the server's listeners keep the
 * process alive, and must not keep a process (or a test worker) alive after they are closed.
 */
export const systemClock: Clock = {
  now: () => performance.now(),
  setTimer: (fn, ms) => setTimeout(fn, Math.max(0, ms)).unref(),
  clearTimer: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * A manual clock for tests: time moves only through `advance`, which fires due timers in time
 * order (timers set while advancing fire too when they fall inside the window).
 */
export class FakeClock implements Clock {
  private time = 0;
  private nextId = 1;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  constructor(start = 0) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimer(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.set(id, { at: this.time + Math.max(0, ms), fn });
    return id;
  }

  clearTimer(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Number of timers not yet fired or cleared. */
  get pendingTimers(): number {
    return this.timers.size;
  }

  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      const due = this.earliestDue(end);
      if (due === undefined) break;
      this.timers.delete(due.id);
      this.time = Math.max(this.time, due.at);
      due.fn();
    }
    this.time = end;
  }

  private earliestDue(end: number): { id: number; at: number; fn: () => void } | undefined {
    let best: { id: number; at: number; fn: () => void } | undefined;
    for (const [id, t] of this.timers) {
      if (t.at <= end && (best === undefined || t.at < best.at)) best = { id, ...t };
    }
    return best;
  }
}

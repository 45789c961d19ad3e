import type { Clock } from './types';

/**
 * One timer at a time, set for a clock time: arming it for another time replaces it, for the same
 * time keeps it, for Infinity clears it. When the time comes it calls `fire` once (the timer is
 * already unset then, so `fire` may arm it again).
 */
export class DeadlineTimer {
  private handle: unknown;
  private at = Infinity;

  constructor(
    private readonly clock: Clock,
    private readonly fire: () => void,
  ) {}

  arm(at: number): void {
    if (at === this.at) return;
    if (this.handle !== undefined) this.clock.clearTimer(this.handle);
    this.handle = undefined;
    this.at = at;
    if (at === Infinity) return;
    this.handle = this.clock.setTimer(() => {
      this.handle = undefined;
      this.at = Infinity;
      this.fire();
    }, at - this.clock.now());
  }

  clear(): void {
    this.arm(Infinity);
  }
}

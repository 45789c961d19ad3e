/** A command's deadline: when it is past, `expire` fails the command. */
export interface Deadline {
  /**
   * performance.now() past which the command has failed: a monotonic clock, as setTimeout's (a
   * wall clock stepped back would hold a hung Redis's commands for as long as the step).
   */
  at: number;
  expire: () => void;
}

/**
 * The deadlines of a port's commands, on one timer armed for the earliest: when it fires, the
 * commands past theirs fail and it is armed for the next. A setTimeout and a clearTimeout per
 * pipeline were a visible share of a role's turn (bench/RESULTS.md, "bench/distributed"); this
 * timer fires about once per timeout while commands are in flight, and is unref'd (the
 * connections keep the process alive while they wait).
 */
export class Deadlines {
  private readonly waiting = new Set<Deadline>();
  private timer?: NodeJS.Timeout;
  private armedFor = Number.POSITIVE_INFINITY;

  add(d: Deadline): void {
    this.waiting.add(d);
    if (d.at < this.armedFor) this.arm(d.at);
  }

  delete(d: Deadline): void {
    this.waiting.delete(d);
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.armedFor = at;
    this.timer = setTimeout(() => this.fire(), Math.max(0, at - performance.now()));
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = performance.now();
    let next = Number.POSITIVE_INFINITY;
    for (const d of this.waiting) {
      if (d.at <= now) {
        this.waiting.delete(d);
        d.expire();
      } else if (d.at < next) {
        next = d.at;
      }
    }
    if (next !== Number.POSITIVE_INFINITY) this.arm(next);
  }
}

/**
 * The per-request series behind Nereid's histograms and summaries: plain counters bound once per
 * model version, so that observing a request costs a few additions (no label hashing, no closure,
 * no allocation). They are rendered through prom-client at scrape time (snapshot-family.ts).
 */

/** Counts of one histogram series: counts[i] observations in (upper[i-1], upper[i]], one more slot for +Inf. */
export class HistogramSeries {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(readonly upper: readonly number[]) {
    this.counts = new Float64Array(upper.length + 1);
  }

  observe(value: number): void {
    const upper = this.upper;
    let i = 0;
    while (i < upper.length && value > upper[i]) i++;
    this.counts[i] += 1;
    this.sum += value;
    this.count += 1;
  }
}

const SAMPLES_PER_AGE_BUCKET = 512;

/** One age bucket of a summary: a uniform sample (reservoir) of what was observed while it was current. */
class AgeBucket {
  readonly samples = new Float64Array(SAMPLES_PER_AGE_BUCKET);
  size = 0;
  seen = 0;

  add(value: number): void {
    this.seen++;
    if (this.size < SAMPLES_PER_AGE_BUCKET) {
      this.samples[this.size++] = value;
      return;
    }
    const j = Math.floor(Math.random() * this.seen);
    if (j < SAMPLES_PER_AGE_BUCKET) this.samples[j] = value;
  }

  clear(): void {
    this.size = 0;
    this.seen = 0;
  }
}

/**
 * A summary series: exact `_sum` and `_count`, and quantiles over a sliding window (`maxAgeMs`,
 * in `ageBuckets` steps, as prometheus-cpp's summaries that Triton uses). Each age bucket keeps a
 * uniform sample of at most 512 observations; the quantiles are computed at scrape time from the
 * samples of the window, each weighted by how many observations it stands for.
 */
export class SummarySeries {
  sum = 0;
  count = 0;
  private readonly buckets: AgeBucket[];
  private current = 0;
  private rotateAt: number;

  constructor(
    private readonly maxAgeMs = 60_000,
    ageBuckets = 5,
    private readonly now: () => number = Date.now,
  ) {
    this.buckets = Array.from({ length: ageBuckets }, () => new AgeBucket());
    this.rotateAt = now() + maxAgeMs / ageBuckets;
  }

  observe(value: number): void {
    this.sum += value;
    this.count += 1;
    if (this.now() >= this.rotateAt) this.rotate();
    this.buckets[this.current].add(value);
  }

  /** The value at each quantile over the window (NaN when the window is empty, as Prometheus clients do). */
  quantiles(qs: readonly number[]): number[] {
    if (this.now() >= this.rotateAt) this.rotate();
    const values: number[] = [];
    const weights: number[] = [];
    for (const b of this.buckets) {
      const w = b.size > 0 ? b.seen / b.size : 0;
      for (let i = 0; i < b.size; i++) {
        values.push(b.samples[i]);
        weights.push(w);
      }
    }
    if (values.length === 0) return qs.map(() => Number.NaN);
    const order = values.map((_, i) => i).sort((x, y) => values[x] - values[y]);
    const total = weights.reduce((a, b) => a + b, 0);
    return qs.map((q) => {
      let acc = 0;
      for (const i of order) {
        acc += weights[i];
        if (acc >= q * total) return values[i];
      }
      return values[order[order.length - 1]];
    });
  }

  /** Moves to the next age bucket (clearing it) as many times as the time passed calls for. */
  private rotate(): void {
    const step = this.maxAgeMs / this.buckets.length;
    const now = this.now();
    let turns = 0;
    while (now >= this.rotateAt && turns < this.buckets.length) {
      this.current = (this.current + 1) % this.buckets.length;
      this.buckets[this.current].clear();
      this.rotateAt += step;
      turns++;
    }
    if (now >= this.rotateAt) this.rotateAt = now + step;
  }
}

import { Counter, Gauge, Histogram, Summary, type Registry } from 'prom-client';

export type Labels = Record<string, string | number>;

export interface Sample {
  labels: Labels;
  value: number;
}

/** Reads a family's samples at scrape time. */
export type ReadSamples = () => Sample[];

/**
 * A prom-client counter whose values are read at scrape time from counts kept elsewhere (the
 * statistics the core keeps anyway): nothing is added per request, and a model that is unloaded
 * leaves the exposition with its counts. Labels keep the order they are given in.
 */
export class SnapshotCounter extends Counter {
  constructor(name: string, help: string, registry: Registry, private readonly read: ReadSamples) {
    super({ name, help, registers: [registry] });
  }

  override async get(): ReturnType<Counter['get']> {
    return { ...(await super.get()), values: this.read() };
  }
}

/** A prom-client gauge read at scrape time (see SnapshotCounter). */
export class SnapshotGauge extends Gauge {
  constructor(name: string, help: string, registry: Registry, private readonly read: ReadSamples) {
    super({ name, help, registers: [registry] });
  }

  override async get(): ReturnType<Gauge['get']> {
    return { ...(await super.get()), values: this.read() };
  }
}

/** One histogram's state: cumulative-free counts per bucket (upper bounds `buckets`), sum and count. */
export interface HistogramSample {
  labels: Labels;
  buckets: readonly number[];
  /** counts[i]: observations in (buckets[i-1], buckets[i]]; one more entry for +Inf. */
  counts: ArrayLike<number>;
  sum: number;
  count: number;
}

/** The exposition lines of histogram samples (`_bucket{le}` cumulative, `_sum`, `_count`). */
export function histogramValues(name: string, samples: HistogramSample[]): { metricName: string; labels: Labels; value: number }[] {
  const out: { metricName: string; labels: Labels; value: number }[] = [];
  for (const h of samples) {
    let acc = 0;
    h.buckets.forEach((le, i) => {
      acc += h.counts[i] ?? 0;
      out.push({ metricName: `${name}_bucket`, labels: { ...h.labels, le }, value: acc });
    });
    out.push({ metricName: `${name}_bucket`, labels: { ...h.labels, le: '+Inf' }, value: h.count });
    out.push({ metricName: `${name}_sum`, labels: h.labels, value: h.sum });
    out.push({ metricName: `${name}_count`, labels: h.labels, value: h.count });
  }
  return out;
}

/**
 * A prom-client histogram whose samples are read at scrape time, each with its own buckets
 * (a python model chooses the buckets of every metric it creates).
 */
export class SnapshotHistogram extends Histogram {
  constructor(
    private readonly family: string,
    private readonly helpText: string,
    registry: Registry,
    private readonly read: () => HistogramSample[],
  ) {
    super({ name: family, help: helpText, registers: [registry], buckets: [] });
  }

  override async get(): ReturnType<Histogram['get']> {
    return { name: this.family, help: this.helpText, type: 'histogram' as never, aggregator: 'sum', collect: () => undefined, values: histogramValues(this.family, this.read()) };
  }

  /** What prom-client's registry renders a histogram from (its own reads the observed buckets). */
  getForPromString(): ReturnType<Histogram['get']> {
    return this.get();
  }
}

/** One summary's state at scrape time. */
export interface SummarySample {
  labels: Labels;
  sum: number;
  count: number;
  quantiles: { quantile: number; value: number }[];
}

/** A prom-client summary read at scrape time, rendered as Triton's: `_count`, `_sum`, then the quantiles. */
export class SnapshotSummary extends Summary {
  constructor(
    private readonly family: string,
    private readonly helpText: string,
    registry: Registry,
    private readonly read: () => SummarySample[],
  ) {
    super({ name: family, help: helpText, registers: [registry] });
  }

  override async get(): ReturnType<Summary['get']> {
    const values: { metricName: string; labels: Labels; value: number }[] = [];
    for (const s of this.read()) {
      values.push({ metricName: `${this.family}_count`, labels: s.labels, value: s.count });
      values.push({ metricName: `${this.family}_sum`, labels: s.labels, value: s.sum });
      for (const q of s.quantiles) values.push({ metricName: this.family, labels: { ...s.labels, quantile: q.quantile }, value: q.value });
    }
    return { name: this.family, help: this.helpText, type: 'summary' as never, aggregator: 'sum', collect: () => undefined, values };
  }
}

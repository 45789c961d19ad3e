import type { Registry } from 'prom-client';
import type { CustomMetricKind, CustomMetricOp, CustomMetricsPort } from '@nereid/backends';
import { SnapshotCounter, SnapshotGauge, SnapshotHistogram, type HistogramSample, type Sample } from './snapshot-family';

/** One metric of a custom family: a value (counter, gauge) or buckets (histogram). */
interface CustomMetric {
  labels: Record<string, string>;
  value: number;
  buckets?: number[];
  counts?: number[];
  sum: number;
  count: number;
  /** Owners holding it, with how many times each opened it. */
  holders: Map<object, number>;
}

interface CustomFamily {
  name: string;
  kind: CustomMetricKind;
  metrics: Map<string, CustomMetric>;
  holders: Map<object, number>;
}

const KIND_WORD: Record<CustomMetricKind, string> = {
  COUNTER: 'TRITONSERVER_METRIC_KIND_COUNTER',
  GAUGE: 'TRITONSERVER_METRIC_KIND_GAUGE',
  HISTOGRAM: 'TRITONSERVER_METRIC_KIND_HISTOGRAM',
};

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Labels in name order (Triton keeps them in a std::map): the key of a metric in its family. */
function sortedLabels(labels: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of Object.keys(labels).sort()) out[k] = String(labels[k]);
  return out;
}

function labelKey(labels: Record<string, string>): string {
  return JSON.stringify(sortedLabels(labels));
}

function hold(holders: Map<object, number>, owner: object): void {
  holders.set(owner, (holders.get(owner) ?? 0) + 1);
}

/** Drops one hold of `owner` (all of them with `all`); true when nobody holds it any more. */
function unhold(holders: Map<object, number>, owner: object, all = false): boolean {
  const n = holders.get(owner);
  if (n === undefined) return false;
  if (all || n <= 1) holders.delete(owner);
  else holders.set(owner, n - 1);
  return holders.size === 0;
}

/**
 * The families and metrics python models create (`pb_utils.MetricFamily`), exported on the
 * metrics port beside Triton's. As in Triton, a family name opened twice with the same kind is
 * one family (the first description stays) and a metric opened twice with the same labels is one
 * metric; either is removed from the exposition once its last holder closes it or is released.
 */
export class CustomMetrics implements CustomMetricsPort {
  private readonly families = new Map<string, CustomFamily>();
  /** Stub restarts by `model\0version`, since the version last loaded anew (clearStubRestarts). */
  private readonly restarts = new Map<string, number>();

  constructor(
    private readonly registry: Registry,
    /** Names the server's own families take: a custom family may not reuse them. */
    private readonly reserved: (name: string) => boolean,
  ) {}

  openFamily(owner: object, name: string, description: string, kind: CustomMetricKind): void {
    const existing = this.families.get(name);
    if (existing) {
      if (existing.kind !== kind) throw new Error(`metric family '${name}' already exists with a different kind (${KIND_WORD[existing.kind]})`);
      hold(existing.holders, owner);
      return;
    }
    if (!METRIC_NAME.test(name)) throw new Error(`invalid metric family name '${name}'`);
    if (this.reserved(name)) throw new Error(`metric family name '${name}' is used by the server's own metrics`);
    const family: CustomFamily = { name, kind, metrics: new Map(), holders: new Map([[owner, 1]]) };
    const values = (): Sample[] => [...family.metrics.values()].map((m) => ({ labels: m.labels, value: m.value }));
    if (kind === 'COUNTER') new SnapshotCounter(name, description, this.registry, values);
    else if (kind === 'GAUGE') new SnapshotGauge(name, description, this.registry, values);
    else new SnapshotHistogram(name, description, this.registry, () => [...family.metrics.values()].map(histogramSample));
    this.families.set(name, family);
  }

  closeFamily(owner: object, name: string): void {
    const family = this.families.get(name);
    if (family && unhold(family.holders, owner)) this.removeFamily(family);
  }

  openMetric(owner: object, familyName: string, labels: Record<string, string>, buckets?: number[]): void {
    const family = this.family(familyName);
    for (const k of Object.keys(labels)) if (!LABEL_NAME.test(k) || k === 'le' || k === 'quantile') throw new Error(`invalid label name '${k}'`);
    const key = labelKey(labels);
    const existing = family.metrics.get(key);
    if (existing) {
      hold(existing.holders, owner);
      return;
    }
    const metric: CustomMetric = { labels: sortedLabels(labels), value: 0, sum: 0, count: 0, holders: new Map([[owner, 1]]) };
    if (family.kind === 'HISTOGRAM') {
      const b = buckets ?? [];
      if (b.some((x, i) => !Number.isFinite(x) || (i > 0 && x <= b[i - 1]))) throw new Error('histogram buckets must be finite and increasing');
      metric.buckets = [...b];
      metric.counts = new Array<number>(b.length).fill(0);
    }
    family.metrics.set(key, metric);
  }

  closeMetric(owner: object, familyName: string, labels: Record<string, string>): void {
    const family = this.families.get(familyName);
    const key = labelKey(labels);
    const metric = family?.metrics.get(key);
    if (family && metric && unhold(metric.holders, owner)) family.metrics.delete(key);
  }

  update(familyName: string, labels: Record<string, string>, op: CustomMetricOp, value: number): void {
    const family = this.family(familyName);
    const metric = this.metric(family, labels);
    const word = KIND_WORD[family.kind];
    if (op === 'increment') {
      if (family.kind === 'HISTOGRAM') throw new Error(`${word} does not support Increment`);
      if (family.kind === 'COUNTER' && value < 0) throw new Error(`${word} can only be incremented monotonically by non-negative values.`);
      metric.value += value;
    } else if (op === 'set') {
      if (family.kind !== 'GAUGE') throw new Error(`${word} does not support Set`);
      metric.value = value;
    } else {
      if (family.kind !== 'HISTOGRAM') throw new Error(`${word} does not support Observe`);
      observe(metric, value);
    }
  }

  value(familyName: string, labels: Record<string, string>): number {
    const family = this.family(familyName);
    const metric = this.metric(family, labels);
    if (family.kind === 'HISTOGRAM') throw new Error(`${KIND_WORD[family.kind]} does not support Value`);
    return metric.value;
  }

  release(owner: object): void {
    for (const family of [...this.families.values()]) {
      for (const [key, metric] of [...family.metrics]) if (unhold(metric.holders, owner, true)) family.metrics.delete(key);
      if (family.holders.has(owner) && unhold(family.holders, owner, true)) this.removeFamily(family);
    }
  }

  stubRestarted(model: string, version: number): void {
    const key = `${model}\0${version}`;
    this.restarts.set(key, (this.restarts.get(key) ?? 0) + 1);
  }

  /**
   * The stub restarts of a model version (`nereid_python_stub_restarts_total`, exported for the
   * versions served only, with their labels): those since it last loaded anew.
   */
  stubRestarts(model: string, version: string): number {
    return this.restarts.get(`${model}\0${version}`) ?? 0;
  }

  /** A version loads anew (not a reload of the same version while it serves): its count starts from none. */
  clearStubRestarts(model: string, version: string): void {
    this.restarts.delete(`${model}\0${version}`);
  }

  private removeFamily(family: CustomFamily): void {
    this.families.delete(family.name);
    this.registry.removeSingleMetric(family.name);
  }

  private family(name: string): CustomFamily {
    const family = this.families.get(name);
    if (!family) throw new Error(`metric family '${name}' does not exist (it has been deleted)`);
    return family;
  }

  private metric(family: CustomFamily, labels: Record<string, string>): CustomMetric {
    const metric = family.metrics.get(labelKey(labels));
    if (!metric) throw new Error(`metric of family '${family.name}' with labels ${labelKey(labels)} does not exist (it has been deleted)`);
    return metric;
  }
}

function observe(metric: CustomMetric, value: number): void {
  const buckets = metric.buckets ?? [];
  const counts = metric.counts ?? [];
  const i = buckets.findIndex((le) => value <= le);
  if (i >= 0) counts[i] += 1;
  metric.sum += value;
  metric.count += 1;
}

function histogramSample(m: CustomMetric): HistogramSample {
  return { labels: m.labels, buckets: m.buckets ?? [], counts: m.counts ?? [], sum: m.sum, count: m.count };
}

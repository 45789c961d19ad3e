import type { CustomMetricKind, CustomMetricOp, CustomMetricsPort } from '../custom-metrics';
import { MSG } from './frames';

type Send = (type: number, header: unknown) => void;

interface MetricRequest {
  op: 'family_new' | 'family_delete' | 'metric_new' | 'metric_delete' | CustomMetricOp | 'value';
  /** Present when the stub waits for the answer. */
  id?: number;
  /** Family name. */
  n: string;
  d?: string;
  k?: CustomMetricKind;
  l?: Record<string, string>;
  b?: number[];
  v?: number;
}

/**
 * Custom metrics kept by the instance alone when the server keeps none (`--allow-metrics=false`, a
 * backend loaded without a server): models that use `pb_utils.MetricFamily` still run, `value()`
 * still reads what was set, and nothing is exported (as Triton's python backend with metrics off).
 */
class LocalMetrics implements CustomMetricsPort {
  private readonly kinds = new Map<string, CustomMetricKind>();
  private readonly values = new Map<string, number>();

  openFamily(_owner: object, name: string, _description: string, kind: CustomMetricKind): void {
    const existing = this.kinds.get(name);
    if (existing !== undefined && existing !== kind) throw new Error(`metric family '${name}' already exists with a different kind (TRITONSERVER_METRIC_KIND_${existing})`);
    this.kinds.set(name, kind);
  }

  closeFamily(): void {}

  openMetric(_owner: object, family: string, labels: Record<string, string>): void {
    const key = LocalMetrics.key(family, labels);
    if (!this.values.has(key)) this.values.set(key, 0);
  }

  closeMetric(): void {}

  update(family: string, labels: Record<string, string>, op: CustomMetricOp, value: number): void {
    const key = LocalMetrics.key(family, labels);
    if (op === 'increment') this.values.set(key, (this.values.get(key) ?? 0) + value);
    else if (op === 'set') this.values.set(key, value);
  }

  value(family: string, labels: Record<string, string>): number {
    return this.values.get(LocalMetrics.key(family, labels)) ?? 0;
  }

  release(): void {
    this.kinds.clear();
    this.values.clear();
  }

  stubRestarted(): void {}

  private static key(family: string, labels: Record<string, string>): string {
    return `${family}\0${JSON.stringify(Object.keys(labels).sort().map((k) => [k, labels[k]]))}`;
  }
}

/**
 * The server's side of a python model instance's custom metrics (libs/backends/python/_nereid_metrics.py):
 * METRIC_REQUEST frames applied to the server's metrics, METRIC_RESULT answers to the requests the
 * stub waits for (`{id}`, `{id, v}` or `{id, e: message}`). The instance owns what it created:
 * `release` (unload, stub restart) removes whatever only it held.
 */
export class MetricBridge {
  /** This instance's current stub: a restarted stub holds its own families. */
  private owner: object = {};

  private readonly port: CustomMetricsPort;

  constructor(port: CustomMetricsPort | undefined, private readonly send: Send) {
    this.port = port ?? new LocalMetrics();
  }

  onRequest(h: MetricRequest): void {
    let answer: Record<string, unknown> = {};
    try {
      answer = this.apply(h);
    } catch (e) {
      answer = { e: (e as Error).message };
    }
    if (h.id !== undefined) this.send(MSG.METRIC_RESULT, { id: h.id, ...answer });
  }

  /** Drops everything the current stub held; a restarted stub starts afresh. */
  release(): void {
    this.port.release(this.owner);
    this.owner = {};
  }

  private apply(h: MetricRequest): Record<string, unknown> {
    const port = this.port;
    const labels = h.l ?? {};
    switch (h.op) {
      case 'family_new':
        port.openFamily(this.owner, h.n, h.d ?? '', h.k ?? 'COUNTER');
        return {};
      case 'family_delete':
        port.closeFamily(this.owner, h.n);
        return {};
      case 'metric_new':
        port.openMetric(this.owner, h.n, labels, h.b);
        return {};
      case 'metric_delete':
        port.closeMetric(this.owner, h.n, labels);
        return {};
      case 'value':
        return { v: port.value(h.n, labels) };
      case 'increment':
      case 'set':
      case 'observe':
        port.update(h.n, labels, h.op, Number(h.v));
        return {};
      default:
        throw new Error(`unknown metric operation '${String((h as { op: unknown }).op)}'`);
    }
  }
}

/**
 * Where a backend's own metrics go: the families and metrics a python model creates with
 * `pb_utils.MetricFamily` (Triton's TRITONSERVER_MetricFamily / TRITONSERVER_Metric API), and
 * the stub restarts. The server's metrics registry implements it; a backend loaded without one
 * keeps no metrics. Every family and metric is held by an owner (one model instance): releasing
 * the owner (unload, stub restart) removes whatever only it held.
 */

export type CustomMetricKind = 'COUNTER' | 'GAUGE' | 'HISTOGRAM';

export type CustomMetricOp = 'increment' | 'set' | 'observe';

export interface CustomMetricsPort {
  /** Opens (or joins, same name and kind) a family; throws an Error whose message says why not. */
  openFamily(owner: object, name: string, description: string, kind: CustomMetricKind): void;
  closeFamily(owner: object, name: string): void;
  /** Opens (or joins, same labels) a metric of an open family; histograms need `buckets`. */
  openMetric(owner: object, family: string, labels: Record<string, string>, buckets?: number[]): void;
  closeMetric(owner: object, family: string, labels: Record<string, string>): void;
  /** Throws an Error in Triton's words when the kind does not allow the operation. */
  update(family: string, labels: Record<string, string>, op: CustomMetricOp, value: number): void;
  /** The metric's current value as the server exports it. */
  value(family: string, labels: Record<string, string>): number;
  /** Closes everything `owner` still holds. */
  release(owner: object): void;
  /** A model instance's process died and is being restarted. */
  stubRestarted(model: string, version: number): void;
}

/**
 * The statistics port: what the metrics read of the served models, and what they are told as
 * requests complete. The core implements both sides (ModelStatsRecorder, the model manager); the
 * metrics know nothing of the core.
 */

export type FailureReason = 'REJECTED' | 'CANCELED' | 'BACKEND' | 'OTHER';

export const FAILURE_REASONS: readonly FailureReason[] = ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER'];

export interface DurationTotal {
  count: number;
  /** Whole nanoseconds. */
  ns: number;
}

/** Compute phases of one execution, in nanoseconds. */
export interface ComputePhases {
  inputNs: number;
  inferNs: number;
  outputNs: number;
}

/** Cumulative counts of one model version (Triton's statistics extension). */
export interface ModelCounts {
  readonly inferenceCount: number;
  readonly executionCount: number;
  readonly success: DurationTotal;
  readonly queue: DurationTotal;
  readonly computeInput: DurationTotal;
  readonly computeInfer: DurationTotal;
  readonly computeOutput: DurationTotal;
  readonly failuresByReason: ReadonlyMap<string, number>;
}

/** One READY model version as the metrics see it. */
export interface ServedVersion {
  model: string;
  version: string;
  /** The scheduler's key of this version. */
  key: string;
  /** `metric_tags` of the model config: exported as `_<key>` labels. */
  tags: Record<string, string>;
  counts: ModelCounts;
  /** How long the load took, in seconds. */
  loadSecs: number;
  /**
   * The observer the StatsObserverFactory made for this version as it loaded: its histograms and
   * summaries are read from it, so they show exactly while the version is served.
   */
  observer?: StatsObserver;
}

/** Where the metrics read the served models at each scrape. */
export interface StatsSource {
  served(): ServedVersion[];
  /** Requests queued and not yet handed to an instance. */
  pending(key: string): number;
  /** Requests handed to an instance and not finished. */
  inflight(key: string): number;
  /** Sequence slots owned by a live sequence (sequence batcher only). */
  sequenceSlotsInUse(key: string): number | undefined;
}

/** Told of each request as it completes (histograms, summaries); one per model version. */
export interface StatsObserver {
  success(requestNs: number, batchSize: number): void;
  failure(requestNs: number, reason: FailureReason): void;
  /** What a successful request's execution cost: its queue time and compute phases. */
  execution(queueNs: number, compute: ComputePhases): void;
  /** One model execution of `batchSize` inferences. */
  batch(batchSize: number): void;
  /** A request's first response left after `ns`. */
  firstResponse(ns: number): void;
}

/**
 * Makes the observer of a model version as it loads; `undefined` when nothing observes. `decoupled`:
 * the config's `model_transaction_policy.decoupled` (Triton keeps the first-response histogram of
 * decoupled models only).
 */
export type StatsObserverFactory = (model: string, version: number, modelMetrics: unknown, decoupled: boolean) => StatsObserver | undefined;

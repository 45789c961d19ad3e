import type { MemoryUsage } from '@nereid/backends';
import type { FailureReason, ModelCounts, StatsObserver } from '@nereid/metrics';
import type { ComputeDurations } from '@nereid/protocol';
import type { ModelStatistics, StatDuration } from './core';

function zero(): StatDuration {
  return { count: 0, ns: 0 };
}

/** Durations are whole nanoseconds, as in Triton's JSON (uint64): a fraction never gets in. */
function add(d: StatDuration, ns: number, count = 1): void {
  d.count += count;
  d.ns += ns > 0 ? Math.round(ns) : 0;
}

export type ResponseKind = 'success' | 'empty' | 'fail' | 'cancel';

/** Triton's InferResponseStatistics of one response index. */
interface ResponseStat {
  compute_infer: StatDuration;
  compute_output: StatDuration;
  success: StatDuration;
  fail: StatDuration;
  empty_response: StatDuration;
  cancel: StatDuration;
}

interface BatchStat {
  compute_input: StatDuration;
  compute_infer: StatDuration;
  compute_output: StatDuration;
}

/**
 * Counters of one model version, in the shape of Triton's statistics extension. As in Triton, a
 * successful request adds its duration and batch size (`recordSuccess`) and what its execution
 * cost (`recordExecution`: queue and compute phases); each model execution adds to the batch
 * statistics (`recordBatch`). An observer (the metrics' histograms and summaries) is told of each
 * event as it is recorded.
 */
export class ModelStatsRecorder implements ModelCounts {
  lastInference = 0;
  inferenceCount = 0;
  executionCount = 0;
  readonly success = zero();
  readonly fail = zero();
  readonly queue = zero();
  readonly computeInput = zero();
  readonly computeInfer = zero();
  readonly computeOutput = zero();
  readonly failuresByReason = new Map<string, number>();
  private readonly batches = new Map<number, BatchStat>();
  private readonly responses = new Map<number, ResponseStat>();

  constructor(
    readonly name: string,
    readonly version: number,
    /** The metrics' observer of this version (its histograms and summaries are read from it while it is served). */
    readonly observer?: StatsObserver,
    /** What the version's instances took when they loaded (Triton's `memory_usage`); default none. */
    private readonly memoryUsage: readonly MemoryUsage[] = [],
  ) {}

  /** A request of `batchSize` inferences finished successfully after `requestNs`. */
  recordSuccess(requestNs: number, batchSize: number): void {
    this.lastInference = Date.now();
    this.inferenceCount += batchSize;
    add(this.success, requestNs);
    this.observer?.success(requestNs, batchSize);
  }

  /** What the execution of a successful request cost: its time in the queue, then its compute phases. */
  recordExecution(queueNs: number, compute: ComputeDurations): void {
    add(this.queue, queueNs);
    add(this.computeInput, compute.inputNs);
    add(this.computeInfer, compute.inferNs);
    add(this.computeOutput, compute.outputNs);
    this.observer?.execution(queueNs, compute);
  }

  recordFailure(requestNs: number, reason: FailureReason): void {
    this.lastInference = Date.now();
    add(this.fail, requestNs);
    this.failuresByReason.set(reason, (this.failuresByReason.get(reason) ?? 0) + 1);
    this.observer?.failure(requestNs, reason);
  }

  /**
   * Response `index` of a request of a decoupled model: `inferNs` producing it (since the previous
   * response, or since the compute began), `outputNs` handing it on (shaping and encoding), as
   * Triton's response statistics count them per kind.
   */
  recordResponse(index: number, inferNs: number, outputNs: number, kind: ResponseKind): void {
    let r = this.responses.get(index);
    if (!r) {
      r = { compute_infer: zero(), compute_output: zero(), success: zero(), fail: zero(), empty_response: zero(), cancel: zero() };
      this.responses.set(index, r);
    }
    if (kind === 'cancel') return add(r.cancel, inferNs);
    add(r.compute_infer, inferNs);
    if (kind === 'empty') return add(r.empty_response, inferNs);
    add(r.compute_output, outputNs);
    add(kind === 'success' ? r.success : r.fail, Math.round(inferNs) + Math.round(outputNs));
  }

  /** A request's first response left `ns` after the request arrived. */
  recordFirstResponse(ns: number): void {
    this.observer?.firstResponse(ns);
  }

  /** One model execution of `batchSize` inferences and what its compute phases took. */
  recordBatch(batchSize: number, compute: ComputeDurations): void {
    this.executionCount += 1;
    let b = this.batches.get(batchSize);
    if (!b) {
      b = { compute_input: zero(), compute_infer: zero(), compute_output: zero() };
      this.batches.set(batchSize, b);
    }
    add(b.compute_input, compute.inputNs);
    add(b.compute_infer, compute.inferNs);
    add(b.compute_output, compute.outputNs);
    this.observer?.batch(batchSize);
  }

  snapshot(): ModelStatistics {
    return {
      name: this.name,
      version: String(this.version),
      last_inference: this.lastInference,
      inference_count: this.inferenceCount,
      execution_count: this.executionCount,
      inference_stats: {
        success: { ...this.success },
        fail: { ...this.fail },
        queue: { ...this.queue },
        compute_input: { ...this.computeInput },
        compute_infer: { ...this.computeInfer },
        compute_output: { ...this.computeOutput },
        cache_hit: zero(),
        cache_miss: zero(),
      },
      response_stats: Object.fromEntries(
        [...this.responses.entries()]
          .sort((a, b) => a[0] - b[0])
          .map(([i, r]) => [String(i), Object.fromEntries(Object.entries(r).map(([k, d]) => [k, { ...d }]))]),
      ),
      batch_stats: [...this.batches.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([batch_size, s]) => ({
          batch_size,
          compute_input: { ...s.compute_input },
          compute_infer: { ...s.compute_infer },
          compute_output: { ...s.compute_output },
        })),
      memory_usage: this.memoryUsage.map((u) => ({ type: u.type, id: u.id, byte_size: u.byteSize })),
    };
  }
}

/**
 * When each response of one request of a decoupled model arrived and was handed on (ms, the
 * server's performance.now()): recorded once the instance has said when its compute began, since
 * the first response's infer time is counted from there.
 */
export class ResponseTimeline {
  private readonly pending: { arrived: number; end: number; kind: ResponseKind }[] = [];
  private computeStart: number | undefined;
  private lastEnd = 0;
  private index = 0;

  constructor(private readonly stats: ModelStatsRecorder) {}

  add(arrived: number, end: number, kind: ResponseKind): void {
    if (this.computeStart === undefined) this.pending.push({ arrived, end, kind });
    else this.record(arrived, end, kind);
  }

  /** The instance began computing at `ms`; the responses so far are recorded now. */
  start(ms: number): void {
    if (this.computeStart !== undefined) return;
    this.computeStart = ms;
    this.lastEnd = ms;
    for (const r of this.pending.splice(0)) this.record(r.arrived, r.end, r.kind);
  }

  private record(arrived: number, end: number, kind: ResponseKind): void {
    const inferNs = Math.max(0, arrived - this.lastEnd) * 1e6;
    this.stats.recordResponse(this.index++, inferNs, Math.max(0, end - arrived) * 1e6, kind);
    this.lastEnd = end;
  }
}

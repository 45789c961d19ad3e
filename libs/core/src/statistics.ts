import type { ModelStatistics, StatDuration } from './core';

function zero(): StatDuration {
  return { count: 0, ns: 0 };
}

function add(d: StatDuration, ns: number, count = 1): void {
  d.count += count;
  d.ns += ns;
}

interface BatchStat {
  compute_input: StatDuration;
  compute_infer: StatDuration;
  compute_output: StatDuration;
}

/** Counters of one model version, in the shape of Triton's statistics extension. */
export class ModelStatsRecorder {
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

  constructor(
    readonly name: string,
    readonly version: number,
  ) {}

  /** A request finished successfully after `totalNs`, of which `queueNs` waiting. */
  recordSuccess(totalNs: number, queueNs: number): void {
    this.lastInference = Date.now();
    add(this.success, totalNs);
    add(this.queue, queueNs);
  }

  recordFailure(totalNs: number, reason: 'REJECTED' | 'CANCELED' | 'BACKEND' | 'OTHER'): void {
    this.lastInference = Date.now();
    add(this.fail, totalNs);
    this.failuresByReason.set(reason, (this.failuresByReason.get(reason) ?? 0) + 1);
  }

  /** One executed batch of `batchSize` inferences made of `requestCount` requests. */
  recordBatch(batchSize: number, requestCount: number, computeNs: number): void {
    this.executionCount += 1;
    this.inferenceCount += batchSize;
    add(this.computeInfer, computeNs, requestCount);
    this.computeInput.count += requestCount;
    this.computeOutput.count += requestCount;
    let b = this.batches.get(batchSize);
    if (!b) {
      b = { compute_input: zero(), compute_infer: zero(), compute_output: zero() };
      this.batches.set(batchSize, b);
    }
    add(b.compute_infer, computeNs);
    b.compute_input.count += 1;
    b.compute_output.count += 1;
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
      response_stats: {},
      batch_stats: [...this.batches.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([batch_size, s]) => ({
          batch_size,
          compute_input: { ...s.compute_input },
          compute_infer: { ...s.compute_infer },
          compute_output: { ...s.compute_output },
        })),
      memory_usage: [],
    };
  }
}

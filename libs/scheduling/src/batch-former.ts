import type { ModelConfig } from '@nereid/model-config';
import type { InferenceRequest } from '@nereid/protocol';
import type { QueuedItem } from './priority-queue';

/** The batching rules of one model, read once from its config. */
export interface BatchRules {
  /** 0 = the model does not batch: every request runs alone. */
  maxBatchSize: number;
  /** Preferred batch sizes, ascending; empty = only max_batch_size. */
  preferred: ReadonlySet<number>;
  /** Longest a request may wait for a better batch (ms). */
  maxQueueDelayMs: number;
  /** Inputs whose non-batch shape may differ inside one batch. */
  raggedInputs: ReadonlySet<string>;
}

export function batchRulesOf(config: ModelConfig): BatchRules {
  const db = config.dynamic_batching ?? {};
  const ragged = (config.input ?? []).filter((i) => i.allow_ragged_batch === true && i.name !== undefined);
  return {
    maxBatchSize: Math.max(0, Number(config.max_batch_size ?? 0)),
    preferred: new Set((db.preferred_batch_size ?? []).map(Number).filter((n) => n > 0)),
    maxQueueDelayMs: Number(db.max_queue_delay_microseconds ?? 0) / 1000,
    raggedInputs: new Set(ragged.map((i) => i.name as string)),
  };
}

/**
 * What to do with the head of the queue now: send its first `send` requests (`full`: nothing queued
 * later could join that batch: it reached max_batch_size, the model does not batch, or the next
 * request does not fit), or wait until `waitUntil` for a fuller batch.
 */
export type BatchDecision = { send: number; full: boolean } | { waitUntil: number };

/** Batch size a request contributes: its first input's first dimension (1 when not batching). */
export function requestBatchSize(request: InferenceRequest, rules: BatchRules): number {
  if (rules.maxBatchSize === 0) return 1;
  const shape = request.inputs[0]?.shape;
  return shape !== undefined && shape.length > 0 ? shape[0] : 1;
}

/**
 * Whether `b` may share a batch with `a`: same set of inputs, and for each input the same
 * datatype and non-batch dimensions unless the input allows ragged batches.
 */
export function batchCompatible(a: InferenceRequest, b: InferenceRequest, rules: BatchRules): boolean {
  if (a.inputs.length !== b.inputs.length) return false;
  for (const x of a.inputs) {
    const y = b.inputs.find((t) => t.name === x.name);
    if (y === undefined || y.datatype !== x.datatype) return false;
    if (rules.raggedInputs.has(x.name)) continue;
    if (y.shape.length !== x.shape.length) return false;
    for (let d = 1; d < x.shape.length; d++) if (x.shape[d] !== y.shape[d]) return false;
  }
  return true;
}

/**
 * Triton's dynamic batch formation over the queue in service order. The candidate batch is the
 * longest prefix whose summed batch size fits `max_batch_size` and whose requests are
 * batch-compatible with the first. It is sent when it reaches the max size; else the largest
 * preferred size within it is sent; else it is sent when it cannot grow (next request does not
 * fit), when there is no delay, when the delay of its oldest request has passed, or when
 * `flush` is set (stopping); otherwise the decision is to wait until that delay ends.
 */
export function formBatch(queue: Iterable<QueuedItem>, rules: BatchRules, now: number, flush: boolean): BatchDecision | undefined {
  let first: InferenceRequest | undefined;
  let count = 0;
  let size = 0;
  let oldest = Infinity;
  let bestPreferred = 0;
  let blocked = false;
  for (const q of queue) {
    const bs = requestBatchSize(q.item.request, rules);
    if (first === undefined) first = q.item.request;
    else if (rules.maxBatchSize === 0 || size + bs > rules.maxBatchSize || !batchCompatible(first, q.item.request, rules)) {
      blocked = true;
      break;
    }
    count++;
    size += bs;
    oldest = Math.min(oldest, q.enqueuedAt);
    if (rules.preferred.has(size)) bestPreferred = count;
    if (size >= rules.maxBatchSize) break;
  }
  if (count === 0) return undefined;
  if (size >= rules.maxBatchSize) return { send: count, full: true };
  if (bestPreferred > 0) return { send: bestPreferred, full: blocked && bestPreferred === count };
  const deadline = oldest + rules.maxQueueDelayMs;
  if (blocked || flush || rules.maxQueueDelayMs <= 0 || now >= deadline) return { send: count, full: blocked };
  return { waitUntil: deadline };
}

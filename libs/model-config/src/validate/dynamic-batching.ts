import type { ModelConfig, ModelQueuePolicy } from '../types';
import { invalid } from './common';

function validatePriorities(levels: number, defaultLevel: number, policyLevels: number[], model: string): void {
  if (levels === 0) return;
  if (defaultLevel < 1 || defaultLevel > levels) invalid(`default priority level must be in range [1, ${levels}] for ${model}`);
  if (policyLevels.some((l) => l < 1 || l > levels)) {
    invalid(`priority queue policy must have priority level in range [1, ${levels}] for ${model}`);
  }
}

function delaysWithTimeout(policy: ModelQueuePolicy | undefined): boolean {
  return policy?.timeout_action === 'DELAY' && (policy.default_timeout_microseconds ?? 0) > 0;
}

/** Dynamic batcher checks (model-config.md §8, §14). */
export function validateDynamicBatching(config: ModelConfig): void {
  const batcher = config.dynamic_batching;
  if (!batcher) return;
  const model = config.name ?? '';
  const mbs = config.max_batch_size ?? 0;
  for (const size of batcher.preferred_batch_size ?? []) {
    if (size < 1) invalid(`dynamic batching preferred size must be positive for ${model}`);
    if (size > mbs) invalid(`dynamic batching preferred size must be <= max batch size for ${model}`);
  }
  const levels = batcher.priority_levels ?? 0;
  const policies = batcher.priority_queue_policy ?? {};
  validatePriorities(levels, batcher.default_priority_level ?? 0, Object.keys(policies).map(Number), model);
  if (!batcher.preserve_ordering) return;
  if (levels > 1) invalid(`Only one priority level is allowed when 'preserve_ordering' is true for ${model}`);
  if (delaysWithTimeout(batcher.default_queue_policy) || Object.values(policies).some(delaysWithTimeout)) {
    invalid(`Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for ${model}`);
  }
}

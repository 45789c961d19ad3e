import type { ModelConfig } from '@nereid/model-config';
import { DefaultScheduler } from './default-scheduler';
import { DynamicBatchScheduler } from './dynamic-batch-scheduler';
import type { Scheduler, SchedulerOptions } from './types';

export type { Clock, ExecuteBatch, Scheduler, SchedulerOptions } from './types';
export { systemClock } from './clock';

/**
 * The scheduler a model's config asks for: the dynamic batcher when `dynamic_batching` is set
 * (batching when `max_batch_size` > 0; priorities and queue policies apply either way), else the
 * default scheduler. Sequence and ensemble scheduling are not handled here.
 */
export function createScheduler(config: ModelConfig, opts: SchedulerOptions): Scheduler {
  if (config.dynamic_batching !== undefined) return new DynamicBatchScheduler(config, opts);
  return new DefaultScheduler(opts);
}

import type { ModelConfig } from '@nereid/model-config';
import { InferenceError } from '@nereid/protocol';
import { DefaultScheduler } from './default-scheduler';
import { DynamicBatchScheduler } from './dynamic-batch-scheduler';
import { EnsembleScheduler } from './ensemble-scheduler';
import { SequenceBatchScheduler } from './sequence-batch-scheduler';
import type { Scheduler, SchedulerOptions } from './types';

export type { Clock, ExecuteBatch, Scheduler, SchedulerOptions, StopOptions } from './types';
export type { EnsembleServices } from './ensemble-run';
export { systemClock } from './clock';

/**
 * The scheduler a model's config asks for: the dynamic batcher when `dynamic_batching` is set
 * (batching when `max_batch_size` > 0; priorities and queue policies apply either way), else the
 * default scheduler; the sequence batcher for every config with `sequence_batching`; the ensemble scheduler for `platform: "ensemble"` (its steps go through
 * `opts.ensemble`; it uses no instance).
 */
export function createScheduler(config: ModelConfig, opts: SchedulerOptions): Scheduler {
  if (config.platform === 'ensemble') {
    if (!opts.ensemble) throw InferenceError.internal(`ensemble '${config.name ?? ''}' needs the server's step function`);
    return new EnsembleScheduler(config, opts.ensemble, opts.clock);
  }
  if (config.sequence_batching !== undefined) return new SequenceBatchScheduler(config, opts);
  if (config.dynamic_batching !== undefined) return new DynamicBatchScheduler(config, opts);
  return new DefaultScheduler(opts);
}

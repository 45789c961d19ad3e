import type { ModelConfig } from '@nereid/model-config';
import type { ExecutionItem } from '@nereid/protocol';
import { systemClock } from './clock';
import { planEnsemble, type EnsemblePlan } from './ensemble-plan';
import { EnsembleRun, type EnsembleServices } from './ensemble-run';
import { stoppingError } from './rejections';
import { StopLatch } from './stop-latch';
import type { Clock, Scheduler } from './types';

export type { EnsembleServices } from './ensemble-run';

/**
 * Triton's ensemble scheduler: an ensemble has no instances and no queue of its own. Each request
 * starts at once and sends its steps, as they become ready, through `services.inferStep`, where
 * each goes through its own model's scheduler: a composing model with dynamic batching batches
 * the steps of concurrent ensemble requests, and its queue policies, priorities and timeouts apply
 * to them. See EnsembleRun for one request's dataflow.
 */
export class EnsembleScheduler implements Scheduler {
  private readonly plan: EnsemblePlan;
  private readonly latch = new StopLatch();
  private active = 0;

  constructor(
    config: ModelConfig,
    private readonly services: EnsembleServices,
    private readonly clock: Clock = systemClock,
  ) {
    this.plan = planEnsemble(config);
  }

  /** Nothing waits here: a request's steps wait in their models' queues. */
  get pendingCount(): number {
    return 0;
  }

  /** Ensemble requests started and not yet answered. */
  get inflightCount(): number {
    return this.active;
  }

  enqueue(item: ExecutionItem): void {
    if (this.latch.stopping) {
      item.sink.fail(stoppingError(item.request));
      return;
    }
    this.active++;
    new EnsembleRun(this.plan, item, this.services, this.clock.now(), () => {
      this.active--;
      this.latch.check(this.active === 0);
    }).start();
  }

  stop(): Promise<void> {
    const p = this.latch.start();
    this.latch.check(this.active === 0);
    return p;
  }
}

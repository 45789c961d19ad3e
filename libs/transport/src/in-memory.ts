import type { SchedulerChannel, WorkerChannel } from './channels';

/**
 * The embedded wiring: gateway, scheduler and worker in one process. Calls go straight through;
 * the interfaces are the same ones the Redis transport implements across processes.
 */
export interface InMemoryTransport {
  scheduler: SchedulerChannel;
  worker: WorkerChannel;
}

export function createInMemoryTransport(scheduler: SchedulerChannel, worker: WorkerChannel): InMemoryTransport {
  return { scheduler, worker };
}

import type { ModelConfig } from '@nereid/model-config';

/**
 * One model version a worker serves, as the cluster knows it (distributed mode): the config the
 * worker loaded (auto-completed), and its instances. Gateways answer readiness, metadata and
 * config from it; schedulers batch for its instances.
 */
export interface ClusterModelEntry {
  name: string;
  version: number;
  workerId: string;
  config: ModelConfig;
  instances: number;
  depth: number;
  /** When the worker last said it serves the version (Date.now() ms); it says so every WORKER_BEAT_MS. */
  at: number;
}

/** How often a worker re-publishes what it serves. */
export const WORKER_BEAT_MS = 1000;
/** An entry not re-published for this long is a worker that is gone (killed, cut off): it is not used. */
export const WORKER_LOST_MS = 3500;

/** The entries of workers still alive at `now`. */
export function liveEntries(entries: ClusterModelEntry[], now = Date.now()): ClusterModelEntry[] {
  return entries.filter((e) => now - e.at <= WORKER_LOST_MS);
}

/** Where the roles share which worker serves what (a Redis hash in distributed mode). */
export interface ClusterModels {
  publish(entry: ClusterModelEntry): Promise<void>;
  withdraw(name: string, version: number, workerId: string): Promise<void>;
  /** Every version served, by any worker. */
  list(): Promise<ClusterModelEntry[]>;
}

/** The table in this process's memory: roles sharing one process (tests over the in-memory port). */
export class MemoryClusterModels implements ClusterModels {
  private readonly entries = new Map<string, ClusterModelEntry>();

  async publish(entry: ClusterModelEntry): Promise<void> {
    this.entries.set(`${entry.name}/${entry.version}@${entry.workerId}`, entry);
  }

  async withdraw(name: string, version: number, workerId: string): Promise<void> {
    this.entries.delete(`${name}/${version}@${workerId}`);
  }

  async list(): Promise<ClusterModelEntry[]> {
    return [...this.entries.values()];
  }
}

/** A worker's work queue is removed from Redis this long after the worker is gone (it is that worker's alone). */
export const WORK_QUEUE_EXPIRE_MS = 60_000;

/** The work queue of one worker for one model version. */
export const workQueueOf = (workerId: string, name: string, version: number): string => `work:${workerId}:${name}/${version}`;
/**
 * The queue of one model version, consumed by the scheduler holding its lease: the requests to
 * batch, and the workers' batch-done reports of the batches it handed out.
 */
export const requestQueueOf = (name: string, version: number): string => `requests:${name}/${version}`;
/** A scheduler's mailbox (the responses it relays for a model with implicit state). */
export const schedulerMailboxOf = (schedulerId: string): string => `scheduler:${schedulerId}`;

import type { AutoCompleteContext, InferFn } from '@nereid/backends';
import type { ModelConfig } from '@nereid/model-config';
import type { ExecutionItem } from '@nereid/protocol';

/** Identifies one loaded model version in the cluster: `<name>/<version>/<generation>`. */
export type ModelKey = string;

/** What a worker needs to load every instance of one model version. */
export interface WorkerLoadSpec {
  key: ModelKey;
  config: ModelConfig;
  modelDir: string;
  versionDir: string;
  version: number;
}

/** What one executed batch cost, reported by the worker for statistics. */
export interface BatchReport {
  key: ModelKey;
  batchSize: number;
  requestCount: number;
  /** Wall time of the execution in nanoseconds. */
  computeNs: number;
}

/** The scheduler's (and control plane's) view of the workers. */
export interface WorkerChannel {
  autoComplete(backend: string, ctx: AutoCompleteContext): Promise<ModelConfig>;
  /** Loads every instance; resolves with the number of instances that take requests. */
  load(spec: WorkerLoadSpec): Promise<number>;
  /** Runs a batch on one instance; resolves when that instance is free again. */
  execute(key: ModelKey, instance: number, items: ExecutionItem[]): Promise<void>;
  unload(key: ModelKey): Promise<void>;
}

/** The gateway's (and control plane's) view of the schedulers. */
export interface SchedulerChannel {
  open(key: ModelKey, config: ModelConfig, instanceCount: number): void;
  enqueue(key: ModelKey, item: ExecutionItem): void;
  /** Stops taking requests for the key and waits for queued and running ones. */
  close(key: ModelKey): Promise<void>;
  pendingCount(key: ModelKey): number;
}

/** Functions a worker needs from the rest of the server. */
export interface WorkerServices {
  /** BLS / ensemble calls back into the server. */
  infer: InferFn;
  onBatch(report: BatchReport): void;
}

import type { AutoCompleteContext, InferFn, MemoryUsage, ModelControl } from '@nereid/backends';
import type { ModelConfig } from '@nereid/model-config';
import type { ComputeDurations, ExecutionItem } from '@nereid/protocol';

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

/** One model execution, reported by the worker for statistics (Triton's batch statistics). */
export interface BatchReport {
  key: ModelKey;
  /** Inferences in the execution: the sum of its requests' batch sizes. */
  batchSize: number;
  requestCount: number;
  /** What each compute phase of the execution took, in whole nanoseconds. */
  compute: ComputeDurations;
}

/** What a loaded model offers its scheduler. */
export interface WorkerCapacity {
  /** Instances that take requests: batches go to instance 0..instances-1. */
  instances: number;
  /**
   * Batches one instance accepts at once (at least 1): an instance that queues the next batch
   * while it runs one takes more. The scheduler decides whether to use that (see SchedulerOptions).
   */
  depth: number;
  /**
   * Every loaded instance, passive ones included (they follow the active ones: instance
   * `instances..loaded-1`). Warmup runs on each. Default: `instances`.
   */
  loaded?: number;
  /**
   * Memory the instances took when they loaded, summed per memory type and device (Triton's
   * statistics `memory_usage`); absent: none measured.
   */
  memoryUsage?: MemoryUsage[];
}

/** Options of one execution. */
export interface ExecuteOptions {
  /** A warmup sample: passive instances (which take no requests) may run it too. Default false. */
  warmup?: boolean;
}

/** The scheduler's (and control plane's) view of the workers. */
export interface WorkerChannel {
  autoComplete(backend: string, ctx: AutoCompleteContext): Promise<ModelConfig>;
  /** Loads every instance; resolves with what the scheduler may hand them. */
  load(spec: WorkerLoadSpec): Promise<WorkerCapacity>;
  /** Runs a batch on one instance; resolves when that instance is free again. */
  execute(key: ModelKey, instance: number, items: ExecutionItem[], options?: ExecuteOptions): Promise<void>;
  unload(key: ModelKey): Promise<void>;
}

/** The gateway's (and control plane's) view of the schedulers. */
export interface SchedulerChannel {
  /** `modelDir`: the model's folder (the sequence batcher reads initial state files from it). */
  open(key: ModelKey, config: ModelConfig, capacity: WorkerCapacity, modelDir?: string): void;
  enqueue(key: ModelKey, item: ExecutionItem): void;
  /**
   * Stops taking requests for the key and waits for queued and running ones. `drainSequences`:
   * another runtime of the model took its traffic (a reload): the sequences live here finish here,
   * their requests still taken, and the close waits for them to end or idle out.
   */
  close(key: ModelKey, options?: { drainSequences?: boolean }): Promise<void>;
  pendingCount(key: ModelKey): number;
}

/** Functions a worker needs from the rest of the server. */
export interface WorkerServices {
  /** BLS / ensemble calls back into the server. */
  infer: InferFn;
  /** Model management by models (python `pb_utils.load_model` & co.); absent: not offered. */
  models?: ModelControl;
  onBatch(report: BatchReport): void;
}

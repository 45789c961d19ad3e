import type { ModelConfig } from '@nereid/model-config';
import type { ModelControl } from './model-control';
import type { ExecutionItem, ExecutionStats, InferenceRequest, InferenceResponse } from '@nereid/protocol';
import type { CustomMetricsPort } from './custom-metrics';
import type { MemoryUsage } from './memory-usage';

export type { ExecutionItem, ExecutionStats };

/**
 * How an instance reports what it did (Triton's TRITONBACKEND_ModelInstanceReportStatistics and
 * ReportBatchStatistics in one call): one call per model execution (a session run, a Python
 * `execute`), naming the requests it covered and what its phases cost. Every
 * executed request is reported once, before the `execute` promise settles or, for work that
 * outlives it (a decoupled model), when that work is done; its responses may go
 * before or after. Build `stats` with `executionStats` from the four timestamps.
 */
export type ReportExecution = (items: readonly ExecutionItem[], stats: ExecutionStats) => void;

/** A `ReportExecution` that drops the report (callers that keep no statistics: tests, probes). */
export const ignoreExecution: ReportExecution = () => undefined;

/** Where an instance runs. */
export interface InstanceSpec {
  /** `<group name>_<n>` as Triton names instances. */
  name: string;
  kind: 'KIND_CPU' | 'KIND_GPU' | 'KIND_MODEL';
  deviceId: number;
}

/** Everything a backend needs to load one instance of one model version. */
export interface LoadContext {
  /** Completed and validated config. */
  config: ModelConfig;
  /** Absolute path of `<repo>/<model>`. */
  modelDir: string;
  /** Absolute path of `<repo>/<model>/<version>`. */
  versionDir: string;
  version: number;
  instance: InstanceSpec;
  /** Calls any model served by this server (BLS). */
  infer?: InferFn;
  /** Loads, unloads and checks models (python `pb_utils.load_model` & co.); absent: not offered. */
  models?: ModelControl;
  /**
   * Log sink tagged with the model. `requests`: the requests the line is about (a model's log
   * line written while it executes their batch): their ids go on the line.
   */
  log: (level: 'info' | 'warn' | 'error' | 'verbose', message: string, requests?: readonly InferenceRequest[]) => void;
  /** The server's metrics (python custom metrics, stub restarts); absent: none are kept. */
  metrics?: CustomMetricsPort;
}

/** Calls a served model and collects its responses (final response last). */
export type InferFn = (
  request: InferenceRequest,
  onResponse?: (r: InferenceResponse) => void,
) => Promise<InferenceResponse[]>;

export interface ModelInstance {
  /**
   * How many batches the instance accepts at once (default 1). An instance that queues work on
   * another thread takes more than one so that its queue never runs dry while the event loop is
   * busy; the scheduler sees `count × concurrency` slots.
   */
  readonly concurrency?: number;
  /**
   * Memory the instance took when it loaded (Triton's statistics `memory_usage`); absent or empty:
   * none measured.
   */
  readonly memoryUsage?: readonly MemoryUsage[];
  /**
   * Runs one batch. Each item's sink gets its responses; a failure of one request goes to that
   * request's sink only. The promise settles when the instance is free for the next batch.
   * `report` receives what the execution cost (see ReportExecution); default: dropped.
   */
  execute(items: ExecutionItem[], report?: ReportExecution): Promise<void>;
  /** Frees the instance (sessions, processes). */
  unload(): Promise<void>;
}

/** Context for auto-complete: the config as read so far and where the model's files are. */
export interface AutoCompleteContext {
  config: ModelConfig;
  modelDir: string;
  versionDir: string;
  /** `--backend-config=default-max-batch-size` (default 4). */
  defaultMaxBatchSize: number;
}

/** A backend turns batches of requests into responses; it knows nothing of HTTP, gRPC or Redis. */
export interface Backend {
  /** The `backend` name in config.pbtxt (`onnxruntime`, `python`, ...). */
  readonly name: string;
  /** Default file in a version dir (`model.onnx`, `model.py`). */
  readonly defaultModelFilename: string;
  /** Default instance count for KIND_CPU groups (Triton: 2 for onnxruntime). */
  readonly defaultCpuInstanceCount?: number;
  /** Fills inputs, outputs, max_batch_size from the model itself. Returns the completed config. */
  autoComplete?(ctx: AutoCompleteContext): Promise<ModelConfig>;
  /** Loads one instance. Throws InferenceError with a reason on failure. */
  loadInstance(ctx: LoadContext): Promise<ModelInstance>;
}

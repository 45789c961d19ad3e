import type { ModelConfig } from '@nereid/model-config';
import type { InferenceRequest, InferenceResponse, Parameters } from '@nereid/protocol';

/** `GET /v2` / ServerMetadata. */
export interface ServerMetadata {
  name: string;
  version: string;
  extensions: string[];
}

export interface TensorMetadata {
  name: string;
  datatype: string;
  shape: number[];
}

/** `GET /v2/models/{m}` / ModelMetadata. */
export interface ModelMetadata {
  name: string;
  versions: string[];
  platform: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
}

export type ModelState = 'READY' | 'UNAVAILABLE' | 'LOADING' | 'UNLOADING' | 'UNKNOWN';

/** One row of the repository index. `version`/`state`/`reason` absent for never-loaded models. */
export interface RepositoryIndexEntry {
  name: string;
  version?: string;
  state?: ModelState;
  reason?: string;
}

export interface StatDuration {
  count: number;
  ns: number;
}

/** One model version's statistics, in Triton's JSON shape (numbers; protocols convert). */
export interface ModelStatistics {
  name: string;
  version: string;
  last_inference: number;
  inference_count: number;
  execution_count: number;
  inference_stats: {
    success: StatDuration;
    fail: StatDuration;
    queue: StatDuration;
    compute_input: StatDuration;
    compute_infer: StatDuration;
    compute_output: StatDuration;
    cache_hit: StatDuration;
    cache_miss: StatDuration;
  };
  response_stats: Record<string, Record<string, StatDuration>>;
  batch_stats: { batch_size: number; compute_input: StatDuration; compute_infer: StatDuration; compute_output: StatDuration }[];
  memory_usage: { type: string; id: number; byte_size: number }[];
}

export interface LogSettings {
  log_file: string;
  log_info: boolean;
  log_warning: boolean;
  log_error: boolean;
  log_verbose_level: number;
  /** `json`: one JSON object per line (beyond Triton). */
  log_format: 'default' | 'ISO8601' | 'json';
}

export type TraceSettings = Record<string, string | string[]>;

/** Options of a load request (`parameters` of RepositoryModelLoad). */
export interface LoadOptions {
  /** ModelConfig JSON text overriding config.pbtxt. */
  config?: string;
  /**
   * File overrides: parameter name as the client sent it (`file:<version>/<path>`) → file content.
   * The manager checks the names (see `overrideFilePath`).
   */
  files?: Map<string, Uint8Array>;
}

/**
 * Receives the responses of one inference, in order. `final` is true on the last call; a decoupled
 * model may deliver a final call without a response.
 */
export interface ResponseObserver {
  onResponse(response: InferenceResponse | undefined, final: boolean): void;
  onError(error: import('@nereid/protocol').InferenceError): void;
  /**
   * What the request's execution cost, once it has succeeded and its instance has reported it
   * (before or after its final response). Ensembles add their steps' compute time from it.
   */
  onExecuted?(stats: import('@nereid/protocol').ExecutionStats): void;
}

/**
 * The inference core: everything the front doors (HTTP, gRPC) need, in protocol-neutral terms.
 * Every method throws (or rejects with) `InferenceError` carrying Triton's code and wording.
 */
export interface InferenceCore {
  serverMetadata(): ServerMetadata;
  isLive(): boolean;
  isReady(): boolean;
  /** Throws for an unknown model (same errors as infer); false when known but not ready. */
  isModelReady(name: string, version: number): boolean;
  modelMetadata(name: string, version: number): ModelMetadata;
  modelConfig(name: string, version: number): ModelConfig;
  /** Whether the model's transaction policy is decoupled (HTTP /infer rejects those). */
  isDecoupled(name: string, version: number): boolean;
  /**
   * Runs an inference. Validates the request against the model config (names, datatypes, shapes,
   * batch size), schedules it and reports every response to the observer.
   */
  infer(request: InferenceRequest, observer: ResponseObserver): void;
  /** Convenience: a non-decoupled inference resolving to its single response. */
  inferOne(request: InferenceRequest): Promise<InferenceResponse>;
  repositoryIndex(readyOnly: boolean): Promise<RepositoryIndexEntry[]>;
  loadModel(name: string, options?: LoadOptions): Promise<void>;
  unloadModel(name: string, unloadDependents: boolean): Promise<void>;
  /**
   * All READY versions when name is empty. A process's own figures are at hand; a distributed
   * gateway's are summed over the cluster, which takes a round of messages (hence the promise).
   */
  statistics(name: string, version: number): ModelStatistics[] | Promise<ModelStatistics[]>;
  /** Whether any request may be traced now (trace extension): front doors note arrival times only then. */
  readonly tracing: boolean;
  logSettings(update?: Partial<LogSettings>): LogSettings;
  traceSettings(model: string, update?: Record<string, unknown>): TraceSettings;
}

export type { Parameters };

/**
 * ModelConfig in its JSON form: proto field names, enums by name, 64-bit integers as numbers,
 * maps as plain objects. config.pbtxt parses into this shape and `GET .../config` prints it.
 * Fields are optional because a partial config.pbtxt is legal until auto-complete and normalization.
 */

export interface ModelTensorReshape {
  shape?: number[];
}

export interface ModelInput {
  name?: string;
  data_type?: string;
  format?: string;
  dims?: number[];
  reshape?: ModelTensorReshape;
  is_shape_tensor?: boolean;
  allow_ragged_batch?: boolean;
  optional?: boolean;
  is_non_linear_format_io?: boolean;
}

export interface ModelOutput {
  name?: string;
  data_type?: string;
  dims?: number[];
  reshape?: ModelTensorReshape;
  label_filename?: string;
  is_shape_tensor?: boolean;
  is_non_linear_format_io?: boolean;
}

export interface ModelRateLimiter {
  resources?: { name?: string; global?: boolean; count?: number }[];
  priority?: number;
}

export interface ModelInstanceGroup {
  name?: string;
  kind?: string;
  count?: number;
  rate_limiter?: ModelRateLimiter;
  gpus?: number[];
  secondary_devices?: { kind?: string; device_id?: number }[];
  profile?: string[];
  passive?: boolean;
  host_policy?: string;
}

export interface ModelVersionPolicy {
  latest?: { num_versions?: number };
  all?: Record<string, never>;
  specific?: { versions?: number[] };
}

export interface ModelQueuePolicy {
  timeout_action?: string;
  default_timeout_microseconds?: number;
  allow_timeout_override?: boolean;
  max_queue_size?: number;
}

export interface ModelDynamicBatching {
  preferred_batch_size?: number[];
  max_queue_delay_microseconds?: number;
  preserve_ordering?: boolean;
  priority_levels?: number;
  default_priority_level?: number;
  default_queue_policy?: ModelQueuePolicy;
  priority_queue_policy?: Record<string, ModelQueuePolicy>;
}

export interface SequenceControl {
  kind?: string;
  int32_false_true?: number[];
  fp32_false_true?: number[];
  bool_false_true?: boolean[];
  data_type?: string;
}

export interface SequenceInitialState {
  data_type?: string;
  dims?: number[];
  zero_data?: boolean;
  data_file?: string;
  name?: string;
}

export interface SequenceState {
  input_name?: string;
  output_name?: string;
  data_type?: string;
  dims?: number[];
  initial_state?: SequenceInitialState[];
  use_same_buffer_for_input_output?: boolean;
  use_growable_memory?: boolean;
}

export interface ModelSequenceBatching {
  direct?: { max_queue_delay_microseconds?: number; minimum_slot_utilization?: number };
  oldest?: {
    max_candidate_sequences?: number;
    preferred_batch_size?: number[];
    max_queue_delay_microseconds?: number;
    preserve_ordering?: boolean;
  };
  max_sequence_idle_microseconds?: number;
  control_input?: { name?: string; control?: SequenceControl[] }[];
  state?: SequenceState[];
  iterative_sequence?: boolean;
}

export interface EnsembleStep {
  model_name?: string;
  model_version?: number;
  input_map?: Record<string, string>;
  output_map?: Record<string, string>;
  model_namespace?: string;
}

export interface ModelEnsembling {
  step?: EnsembleStep[];
  max_inflight_requests?: number;
}

export interface ModelWarmupInput {
  data_type?: string;
  dims?: number[];
  zero_data?: boolean;
  random_data?: boolean;
  input_data_file?: string;
}

export interface ModelWarmup {
  name?: string;
  batch_size?: number;
  inputs?: Record<string, ModelWarmupInput>;
  count?: number;
}

export interface BatchInput {
  kind?: string;
  target_name?: string[];
  data_type?: string;
  source_input?: string[];
}

export interface BatchOutput {
  target_name?: string[];
  kind?: string;
  source_input?: string[];
}

export interface ModelConfig {
  name?: string;
  platform?: string;
  backend?: string;
  runtime?: string;
  version_policy?: ModelVersionPolicy;
  max_batch_size?: number;
  input?: ModelInput[];
  output?: ModelOutput[];
  batch_input?: BatchInput[];
  batch_output?: BatchOutput[];
  optimization?: Record<string, unknown>;
  dynamic_batching?: ModelDynamicBatching;
  sequence_batching?: ModelSequenceBatching;
  ensemble_scheduling?: ModelEnsembling;
  instance_group?: ModelInstanceGroup[];
  default_model_filename?: string;
  cc_model_filenames?: Record<string, string>;
  metric_tags?: Record<string, string>;
  parameters?: Record<string, { string_value?: string }>;
  model_warmup?: ModelWarmup[];
  model_operations?: { op_library_filename?: string[] };
  model_transaction_policy?: { decoupled?: boolean };
  model_repository_agents?: { agents?: { name?: string; parameters?: Record<string, string> }[] };
  response_cache?: { enable?: boolean };
  model_metrics?: Record<string, unknown>;
}

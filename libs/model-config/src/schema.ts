/**
 * Descriptor table of `model_config.proto` (package `inference`), the one source of truth that drives the
 * pbtxt parser/printer, the JSON form and the generated `.proto` text. Declarations keep the proto's order
 * (spec model-config.md §17); each field is written as in proto source:
 * `[repeated] <type> <name> = <number>`, `map<k, v> <name> = <n>`, or `oneof <group>: <type> <name> = <n>`.
 */

export type ScalarType = 'string' | 'bool' | 'int32' | 'uint32' | 'int64' | 'uint64' | 'float' | 'double';
export type FieldLabel = 'singular' | 'repeated' | 'map';

export interface FieldDescriptor {
  name: string;
  number: number;
  label: FieldLabel;
  /** Name of the oneof group, when the field is a member of one. */
  oneof?: string;
  /** Type as written in proto source (`uint32`, `Resource`, `map<string, Shape>`). */
  typeName: string;
  /** Kind of the value (of the map value for maps). */
  kind: 'scalar' | 'enum' | 'message';
  /** Scalar type when kind is 'scalar'. */
  scalar?: ScalarType;
  /** Full name (without package) of the enum or message type. */
  ref?: string;
  /** Key type of a map field. */
  mapKey?: ScalarType;
}

export interface MessageDescriptor {
  /** Full name without package, e.g. `ModelInstanceGroup.SecondaryDevice`. */
  fullName: string;
  fields: FieldDescriptor[];
}

export interface EnumValueDescriptor {
  name: string;
  number: number;
}

export interface EnumDescriptor {
  fullName: string;
  values: EnumValueDescriptor[];
}

export const PROTO_PACKAGE = 'inference';

type Decl = { message: string; fields: string[] } | { enum: string; values: string[] };

const DECLARATIONS: Decl[] = [
  { enum: 'DataType', values: ['TYPE_INVALID', 'TYPE_BOOL', 'TYPE_UINT8', 'TYPE_UINT16', 'TYPE_UINT32', 'TYPE_UINT64', 'TYPE_INT8', 'TYPE_INT16', 'TYPE_INT32', 'TYPE_INT64', 'TYPE_FP16', 'TYPE_FP32', 'TYPE_FP64', 'TYPE_STRING', 'TYPE_BF16'] },
  { message: 'ModelRateLimiter', fields: ['repeated Resource resources = 1', 'uint32 priority = 2'] },
  { message: 'ModelRateLimiter.Resource', fields: ['string name = 1', 'bool global = 2', 'uint32 count = 3'] },
  {
    message: 'ModelInstanceGroup',
    fields: [
      'string name = 1',
      'Kind kind = 4',
      'int32 count = 2',
      'ModelRateLimiter rate_limiter = 6',
      'repeated int32 gpus = 3',
      'repeated SecondaryDevice secondary_devices = 8',
      'repeated string profile = 5',
      'bool passive = 7',
      'string host_policy = 9',
    ],
  },
  { enum: 'ModelInstanceGroup.Kind', values: ['KIND_AUTO', 'KIND_GPU', 'KIND_CPU', 'KIND_MODEL'] },
  { message: 'ModelInstanceGroup.SecondaryDevice', fields: ['SecondaryDeviceKind kind = 1', 'int64 device_id = 2'] },
  { enum: 'ModelInstanceGroup.SecondaryDevice.SecondaryDeviceKind', values: ['KIND_NVDLA'] },
  { message: 'ModelTensorReshape', fields: ['repeated int64 shape = 1'] },
  {
    message: 'ModelInput',
    fields: [
      'string name = 1',
      'DataType data_type = 2',
      'Format format = 3',
      'repeated int64 dims = 4',
      'ModelTensorReshape reshape = 5',
      'bool is_shape_tensor = 6',
      'bool allow_ragged_batch = 7',
      'bool optional = 8',
      'bool is_non_linear_format_io = 9',
    ],
  },
  { enum: 'ModelInput.Format', values: ['FORMAT_NONE', 'FORMAT_NHWC', 'FORMAT_NCHW'] },
  {
    message: 'ModelOutput',
    fields: [
      'string name = 1',
      'DataType data_type = 2',
      'repeated int64 dims = 3',
      'ModelTensorReshape reshape = 5',
      'string label_filename = 4',
      'bool is_shape_tensor = 6',
      'bool is_non_linear_format_io = 7',
    ],
  },
  {
    message: 'BatchInput',
    fields: ['Kind kind = 1', 'repeated string target_name = 2', 'DataType data_type = 3', 'repeated string source_input = 4'],
  },
  {
    enum: 'BatchInput.Kind',
    values: [
      'BATCH_ELEMENT_COUNT',
      'BATCH_ACCUMULATED_ELEMENT_COUNT',
      'BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO',
      'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE',
      'BATCH_ITEM_SHAPE',
      'BATCH_ITEM_SHAPE_FLATTEN',
    ],
  },
  { message: 'BatchOutput', fields: ['repeated string target_name = 1', 'Kind kind = 2', 'repeated string source_input = 3'] },
  { enum: 'BatchOutput.Kind', values: ['BATCH_SCATTER_WITH_INPUT_SHAPE'] },
  {
    message: 'ModelVersionPolicy',
    fields: ['oneof policy_choice: Latest latest = 1', 'oneof policy_choice: All all = 2', 'oneof policy_choice: Specific specific = 3'],
  },
  { message: 'ModelVersionPolicy.Latest', fields: ['uint32 num_versions = 1'] },
  { message: 'ModelVersionPolicy.All', fields: [] },
  { message: 'ModelVersionPolicy.Specific', fields: ['repeated int64 versions = 1'] },
  {
    message: 'ModelOptimizationPolicy',
    fields: [
      'Graph graph = 1',
      'ModelPriority priority = 2',
      'Cuda cuda = 3',
      'ExecutionAccelerators execution_accelerators = 4',
      'PinnedMemoryBuffer input_pinned_memory = 5',
      'PinnedMemoryBuffer output_pinned_memory = 6',
      'uint32 gather_kernel_buffer_threshold = 7',
      'bool eager_batching = 8',
    ],
  },
  { message: 'ModelOptimizationPolicy.Graph', fields: ['int32 level = 1'] },
  { enum: 'ModelOptimizationPolicy.ModelPriority', values: ['PRIORITY_DEFAULT', 'PRIORITY_MAX', 'PRIORITY_MIN'] },
  {
    message: 'ModelOptimizationPolicy.Cuda',
    fields: ['bool graphs = 1', 'bool busy_wait_events = 2', 'repeated GraphSpec graph_spec = 3', 'bool output_copy_stream = 4'],
  },
  {
    message: 'ModelOptimizationPolicy.Cuda.GraphSpec',
    fields: ['int32 batch_size = 1', 'map<string, Shape> input = 2', 'LowerBound graph_lower_bound = 3'],
  },
  { message: 'ModelOptimizationPolicy.Cuda.GraphSpec.Shape', fields: ['repeated int64 dim = 1'] },
  { message: 'ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound', fields: ['int32 batch_size = 1', 'map<string, Shape> input = 2'] },
  {
    message: 'ModelOptimizationPolicy.ExecutionAccelerators',
    fields: ['repeated Accelerator gpu_execution_accelerator = 1', 'repeated Accelerator cpu_execution_accelerator = 2'],
  },
  { message: 'ModelOptimizationPolicy.ExecutionAccelerators.Accelerator', fields: ['string name = 1', 'map<string, string> parameters = 2'] },
  { message: 'ModelOptimizationPolicy.PinnedMemoryBuffer', fields: ['bool enable = 1'] },
  {
    message: 'ModelQueuePolicy',
    fields: ['TimeoutAction timeout_action = 1', 'uint64 default_timeout_microseconds = 2', 'bool allow_timeout_override = 3', 'uint32 max_queue_size = 4'],
  },
  { enum: 'ModelQueuePolicy.TimeoutAction', values: ['REJECT', 'DELAY'] },
  {
    message: 'ModelDynamicBatching',
    fields: [
      'repeated int32 preferred_batch_size = 1',
      'uint64 max_queue_delay_microseconds = 2',
      'bool preserve_ordering = 3',
      'uint64 priority_levels = 4',
      'uint64 default_priority_level = 5',
      'ModelQueuePolicy default_queue_policy = 6',
      'map<uint64, ModelQueuePolicy> priority_queue_policy = 7',
    ],
  },
  {
    message: 'ModelSequenceBatching',
    fields: [
      'oneof strategy_choice: StrategyDirect direct = 3',
      'oneof strategy_choice: StrategyOldest oldest = 4',
      'uint64 max_sequence_idle_microseconds = 1',
      'repeated ControlInput control_input = 2',
      'repeated State state = 5',
      'bool iterative_sequence = 6',
    ],
  },
  {
    message: 'ModelSequenceBatching.Control',
    fields: [
      'Kind kind = 1',
      'repeated int32 int32_false_true = 2',
      'repeated float fp32_false_true = 3',
      'repeated bool bool_false_true = 5',
      'DataType data_type = 4',
    ],
  },
  {
    enum: 'ModelSequenceBatching.Control.Kind',
    values: ['CONTROL_SEQUENCE_START', 'CONTROL_SEQUENCE_READY', 'CONTROL_SEQUENCE_END', 'CONTROL_SEQUENCE_CORRID'],
  },
  { message: 'ModelSequenceBatching.ControlInput', fields: ['string name = 1', 'repeated Control control = 2'] },
  {
    message: 'ModelSequenceBatching.InitialState',
    fields: [
      'DataType data_type = 1',
      'repeated int64 dims = 2',
      'oneof state_data: bool zero_data = 3',
      'oneof state_data: string data_file = 4',
      'string name = 5',
    ],
  },
  {
    message: 'ModelSequenceBatching.State',
    fields: [
      'string input_name = 1',
      'string output_name = 2',
      'DataType data_type = 3',
      'repeated int64 dims = 4',
      'repeated InitialState initial_state = 5',
      'bool use_same_buffer_for_input_output = 6',
      'bool use_growable_memory = 7',
    ],
  },
  { message: 'ModelSequenceBatching.StrategyDirect', fields: ['uint64 max_queue_delay_microseconds = 1', 'float minimum_slot_utilization = 2'] },
  {
    message: 'ModelSequenceBatching.StrategyOldest',
    fields: [
      'int32 max_candidate_sequences = 1',
      'repeated int32 preferred_batch_size = 2',
      'uint64 max_queue_delay_microseconds = 3',
      'bool preserve_ordering = 4',
    ],
  },
  { message: 'ModelEnsembling', fields: ['repeated Step step = 1', 'uint32 max_inflight_requests = 2'] },
  {
    message: 'ModelEnsembling.Step',
    fields: [
      'string model_name = 1',
      'int64 model_version = 2',
      'map<string, string> input_map = 3',
      'map<string, string> output_map = 4',
      'string model_namespace = 5',
    ],
  },
  { message: 'ModelParameter', fields: ['string string_value = 1'] },
  { message: 'ModelWarmup', fields: ['string name = 1', 'uint32 batch_size = 2', 'map<string, Input> inputs = 3', 'uint32 count = 4'] },
  {
    message: 'ModelWarmup.Input',
    fields: [
      'DataType data_type = 1',
      'repeated int64 dims = 2',
      'oneof input_data_type: bool zero_data = 3',
      'oneof input_data_type: bool random_data = 4',
      'oneof input_data_type: string input_data_file = 5',
    ],
  },
  { message: 'ModelOperations', fields: ['repeated string op_library_filename = 1'] },
  { message: 'ModelTransactionPolicy', fields: ['bool decoupled = 1'] },
  { message: 'ModelRepositoryAgents', fields: ['repeated Agent agents = 1'] },
  { message: 'ModelRepositoryAgents.Agent', fields: ['string name = 1', 'map<string, string> parameters = 2'] },
  { message: 'ModelResponseCache', fields: ['bool enable = 1'] },
  { message: 'ModelMetrics', fields: ['repeated MetricControl metric_control = 1'] },
  {
    message: 'ModelMetrics.MetricControl',
    fields: ['MetricIdentifier metric_identifier = 1', 'oneof metric_options: HistogramOptions histogram_options = 2'],
  },
  { message: 'ModelMetrics.MetricControl.MetricIdentifier', fields: ['string family = 1'] },
  { message: 'ModelMetrics.MetricControl.HistogramOptions', fields: ['repeated double buckets = 1'] },
  {
    message: 'ModelConfig',
    fields: [
      'string name = 1',
      'string platform = 2',
      'string backend = 17',
      'string runtime = 25',
      'ModelVersionPolicy version_policy = 3',
      'int32 max_batch_size = 4',
      'repeated ModelInput input = 5',
      'repeated ModelOutput output = 6',
      'repeated BatchInput batch_input = 20',
      'repeated BatchOutput batch_output = 21',
      'ModelOptimizationPolicy optimization = 12',
      'oneof scheduling_choice: ModelDynamicBatching dynamic_batching = 11',
      'oneof scheduling_choice: ModelSequenceBatching sequence_batching = 13',
      'oneof scheduling_choice: ModelEnsembling ensemble_scheduling = 15',
      'repeated ModelInstanceGroup instance_group = 7',
      'string default_model_filename = 8',
      'map<string, string> cc_model_filenames = 9',
      'map<string, string> metric_tags = 10',
      'map<string, ModelParameter> parameters = 14',
      'repeated ModelWarmup model_warmup = 16',
      'ModelOperations model_operations = 18',
      'ModelTransactionPolicy model_transaction_policy = 19',
      'ModelRepositoryAgents model_repository_agents = 23',
      'ModelResponseCache response_cache = 24',
      'ModelMetrics model_metrics = 26',
    ],
  },
];

const SCALARS: ReadonlySet<string> = new Set<ScalarType>(['string', 'bool', 'int32', 'uint32', 'int64', 'uint64', 'float', 'double']);

/** Declaration entries in proto order: what the `.proto` printer walks. */
export type Declaration = { kind: 'message'; message: MessageDescriptor } | { kind: 'enum'; enum: EnumDescriptor };

const declarations: Declaration[] = [];
const messages = new Map<string, MessageDescriptor>();
const enums = new Map<string, EnumDescriptor>();

function resolveType(scope: string, name: string): { kind: 'enum' | 'message'; ref: string } {
  const parts = scope.split('.');
  for (let i = parts.length; i >= 0; i--) {
    const candidate = [...parts.slice(0, i), name].join('.');
    if (enums.has(candidate)) return { kind: 'enum', ref: candidate };
    if (DECLARATIONS.some((d) => 'message' in d && d.message === candidate)) return { kind: 'message', ref: candidate };
  }
  throw new Error(`model_config schema: unresolved type '${name}' in '${scope}'`);
}

function describeValue(scope: string, typeName: string): Pick<FieldDescriptor, 'kind' | 'scalar' | 'ref'> {
  if (SCALARS.has(typeName)) return { kind: 'scalar', scalar: typeName as ScalarType };
  return resolveType(scope, typeName);
}

const FIELD_RE = /^(?:oneof (\w+): )?(?:(repeated) )?(map<(\w+), (\w+)>|\w+) (\w+) = (\d+)$/;

function parseFieldDecl(scope: string, text: string): FieldDescriptor {
  const m = FIELD_RE.exec(text);
  if (!m) throw new Error(`model_config schema: bad field declaration '${text}'`);
  const [, oneof, repeated, typeName, mapKey, mapValue, name, number] = m;
  const isMap = mapKey !== undefined;
  const field: FieldDescriptor = {
    name,
    number: Number(number),
    label: isMap ? 'map' : repeated ? 'repeated' : 'singular',
    typeName: isMap ? `map<${mapKey}, ${mapValue}>` : typeName,
    ...describeValue(scope, isMap ? mapValue : typeName),
  };
  if (oneof) field.oneof = oneof;
  if (isMap) field.mapKey = mapKey as ScalarType;
  return field;
}

function buildTables(): void {
  for (const d of DECLARATIONS) {
    if ('enum' in d) enums.set(d.enum, { fullName: d.enum, values: d.values.map((name, number) => ({ name, number })) });
  }
  for (const d of DECLARATIONS) {
    if ('enum' in d) {
      declarations.push({ kind: 'enum', enum: enums.get(d.enum) as EnumDescriptor });
      continue;
    }
    const message: MessageDescriptor = { fullName: d.message, fields: d.fields.map((f) => parseFieldDecl(d.message, f)) };
    messages.set(d.message, message);
    declarations.push({ kind: 'message', message });
  }
}

buildTables();

/** Every message and enum of model_config.proto, in declaration order. */
export const MODEL_CONFIG_DECLARATIONS: readonly Declaration[] = declarations;

export function getMessage(fullName: string): MessageDescriptor {
  const m = messages.get(fullName);
  if (!m) throw new Error(`model_config schema: unknown message '${fullName}'`);
  return m;
}

export function getEnum(fullName: string): EnumDescriptor {
  const e = enums.get(fullName);
  if (!e) throw new Error(`model_config schema: unknown enum '${fullName}'`);
  return e;
}

export function allMessages(): MessageDescriptor[] {
  return [...messages.values()];
}

export function allEnums(): EnumDescriptor[] {
  return [...enums.values()];
}

/** The root message of config.pbtxt. */
export const MODEL_CONFIG_MESSAGE = 'ModelConfig';

/** Synthetic `{ key, value }` entry message of a map field (what the text format spells out). */
export function mapEntryMessage(owner: MessageDescriptor, field: FieldDescriptor): MessageDescriptor {
  const value: FieldDescriptor = { name: 'value', number: 2, label: 'singular', typeName: '', kind: field.kind };
  if (field.scalar) value.scalar = field.scalar;
  if (field.ref) value.ref = field.ref;
  const key: FieldDescriptor = { name: 'key', number: 1, label: 'singular', typeName: '', kind: 'scalar', scalar: field.mapKey };
  return { fullName: `${owner.fullName}.${entryName(field.name)}`, fields: [key, value] };
}

function entryName(field: string): string {
  return field.replace(/(^|_)([a-z])/g, (_s, _u, c: string) => c.toUpperCase()) + 'Entry';
}

import { InferenceError } from '@nereid/protocol';
import { modelConfigFromJson, modelConfigToJson } from './json';
import { parseModelConfig } from './pbtxt';

const SIMPLE = `
name: "simple" platform: "onnxruntime_onnx" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]
dynamic_batching { priority_levels: 2 default_priority_level: 1 priority_queue_policy { key: 2 value { default_timeout_microseconds: 5 } } }
instance_group [ { kind: KIND_CPU count: 1 secondary_devices { device_id: 3 } } ]
`;

describe('modelConfigToJson', () => {
  const json = modelConfigToJson(parseModelConfig(SIMPLE, 'simple/config.pbtxt'));

  it('prints top-level keys in proto declaration order, omitting unset sub-messages', () => {
    expect(Object.keys(json)).toEqual([
      'name', 'platform', 'backend', 'runtime', 'max_batch_size', 'input', 'output', 'batch_input', 'batch_output',
      'dynamic_batching', 'instance_group', 'default_model_filename', 'cc_model_filenames', 'metric_tags', 'parameters',
      'model_warmup',
    ]);
  });

  it('prints every scalar, repeated and map field at its default', () => {
    expect(json).toMatchObject({ backend: '', runtime: '', batch_input: [], cc_model_filenames: {}, parameters: {}, model_warmup: [] });
    expect(json.input).toEqual([
      {
        name: 'INPUT0', data_type: 'TYPE_INT32', format: 'FORMAT_NONE', dims: [16], is_shape_tensor: false,
        allow_ragged_batch: false, optional: false, is_non_linear_format_io: false,
      },
    ]);
    const group = (json.instance_group as Record<string, unknown>[])[0];
    expect(group).toEqual({
      name: '', kind: 'KIND_CPU', count: 1, gpus: [], secondary_devices: [{ kind: 'KIND_NVDLA', device_id: '3' }],
      profile: [], passive: false, host_policy: '',
    });
  });

  it('prints Triton int64 fields as numbers, other int64 fields as strings, map keys as strings', () => {
    expect(json.dynamic_batching).toEqual({
      preferred_batch_size: [], max_queue_delay_microseconds: 0, preserve_ordering: false, priority_levels: 2,
      default_priority_level: 1,
      priority_queue_policy: { '2': { timeout_action: 'REJECT', default_timeout_microseconds: 5, allow_timeout_override: false, max_queue_size: 0 } },
    });
  });

  it('prints only the set member of a oneof and non-finite floats as protobuf JSON strings', () => {
    const c = modelConfigToJson({
      model_warmup: [{ inputs: { X: { random_data: false } } }],
      model_metrics: { metric_control: [{ histogram_options: { buckets: [Infinity, NaN] } }] },
    } as never);
    expect((c.model_warmup as never[])[0]).toEqual({ name: '', batch_size: 0, inputs: { X: { data_type: 'TYPE_INVALID', dims: [], random_data: false } }, count: 0 });
    expect(c.model_metrics).toEqual({ metric_control: [{ histogram_options: { buckets: ['Infinity', 'NaN'] } }] });
  });
});

describe('modelConfigFromJson', () => {
  it('accepts enum names in any case, numeric strings and lowerCamel names', () => {
    const c = modelConfigFromJson({
      name: 'm',
      maxBatchSize: '4',
      input: [{ name: 'X', data_type: 'type_fp32', dims: ['-1', 3] }],
      instance_group: [{ kind: 'kind_gpu', gpus: [0] }],
      dynamic_batching: { priority_queue_policy: { '1': { timeout_action: 1 } } },
    });
    expect(c).toEqual({
      name: 'm',
      max_batch_size: 4,
      input: [{ name: 'X', data_type: 'TYPE_FP32', dims: [-1, 3] }],
      instance_group: [{ kind: 'KIND_GPU', gpus: [0] }],
      dynamic_batching: { priority_queue_policy: { '1': { timeout_action: 'DELAY' } } },
    });
  });

  it('accepts the JSON text and treats null as unset', () => {
    expect(modelConfigFromJson('{"name":"m","backend":null}')).toEqual({ name: 'm' });
  });

  it.each([
    [{ nmae: 'x' }, 'Invalid config override: Cannot find field: nmae in message inference.ModelConfig'],
    [{ input: [{ foo: 1 }] }, 'Invalid config override: Cannot find field: foo in message inference.ModelInput'],
    [{ max_batch_size: 1.5 }, 'Invalid config override: expected an integer for field "max_batch_size" of message inference.ModelConfig, got 1.5'],
    [{ max_batch_size: 2 ** 40 }, 'Invalid config override: integer out of range for field "max_batch_size" of message inference.ModelConfig: 1099511627776'],
    [{ input: [{ data_type: 'FP32' }] }, 'Invalid config override: invalid value "FP32" for enum field "data_type" of message inference.ModelInput'],
    [{ input: {} }, 'Invalid config override: expected an array for repeated field "input" of message inference.ModelConfig'],
    [{ name: 3 }, 'Invalid config override: expected a string for field "name" of message inference.ModelConfig, got 3'],
    [
      { dynamic_batching: {}, sequence_batching: {} },
      'Invalid config override: field "sequence_batching" is specified along with field "dynamic_batching", another member of oneof "scheduling_choice"',
    ],
    [{ dynamic_batching: { priority_queue_policy: { one: {} } } }, 'Invalid config override: expected an integer for field "priority_queue_policy" of message inference.ModelDynamicBatching, got "one"'],
    ['{not json', /^Invalid config override: .*JSON/],
    [[], 'Invalid config override: expected an object for message inference.ModelConfig, got []'],
  ] as [unknown, string | RegExp][])('rejects %j', (input, message) => {
    let error: unknown;
    try {
      modelConfigFromJson(input);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InferenceError);
    expect((error as InferenceError).code).toBe('INVALID_ARG');
    if (typeof message === 'string') expect((error as InferenceError).message).toBe(message);
    else expect((error as InferenceError).message).toMatch(message);
  });
});

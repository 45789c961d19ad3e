import { InferenceError } from '@nereid/protocol';
import type { ModelConfig } from './types';
import { validateModelConfig } from './validate';

const BASE: ModelConfig = {
  name: 'm',
  backend: 'onnxruntime',
  platform: 'onnxruntime_onnx',
  max_batch_size: 4,
  input: [{ name: 'IN', data_type: 'TYPE_FP32', dims: [4] }],
  output: [{ name: 'OUT', data_type: 'TYPE_FP32', dims: [4] }],
};
const OPTS = { knownBackends: ['onnxruntime', 'python'], gpuCount: 0 };

function errorOf(config: ModelConfig, gpuCount = 0): InferenceError | undefined {
  try {
    validateModelConfig(config, { ...OPTS, gpuCount });
    return undefined;
  } catch (e) {
    return e as InferenceError;
  }
}

describe('validateModelConfig', () => {
  it('accepts a complete config', () => {
    expect(errorOf(BASE)).toBeUndefined();
  });

  it('leaves KIND_GPU on a machine without GPUs to the backend', () => {
    expect(errorOf({ ...BASE, instance_group: [{ name: 'g', kind: 'KIND_GPU', count: 1, gpus: [0] }] })).toBeUndefined();
  });

  it('rejects GPU ids that do not exist when GPUs are present', () => {
    const err = errorOf({ ...BASE, instance_group: [{ name: 'g', kind: 'KIND_GPU', count: 1, gpus: [0, 2] }] }, 2);
    expect(err).toBeInstanceOf(InferenceError);
    expect(err?.code).toBe('INVALID_ARG');
    expect(err?.message).toBe('instance group g of model m specifies invalid or unsupported gpu id 2; available gpu ids are 0 to 1');
  });

  it('rejects a group without a positive count (normalization fills it)', () => {
    expect(errorOf({ ...BASE, instance_group: [{ name: 'g', kind: 'KIND_CPU', count: 0 }] })?.message).toBe(
      "instance group g of model m must specify 'count' >= 1",
    );
  });

  it('accepts an unknown platform paired with a known backend, and backends without platforms', () => {
    expect(errorOf({ ...BASE, platform: 'custom', backend: 'python' })).toBeUndefined();
    expect(errorOf({ ...BASE, platform: '', backend: 'python' })).toBeUndefined();
  });

  it('uses the platform backend when backend is empty', () => {
    expect(errorOf({ ...BASE, backend: '' })).toBeUndefined();
    expect(errorOf({ ...BASE, backend: '', platform: 'tensorrt_plan' })?.message).toBe(
      "unknown backend 'tensorrt' for model 'm'; this server has backends: onnxruntime, python",
    );
  });

  it('accepts reshapes with matching wildcards and the empty reshape of a batched one-element tensor', () => {
    const input = { name: 'IN', data_type: 'TYPE_FP32', dims: [-1, 6], reshape: { shape: [2, -1, 3] } };
    expect(errorOf({ ...BASE, input: [input] })).toBeUndefined();
    expect(errorOf({ ...BASE, input: [{ ...input, dims: [1], reshape: {} }] })).toBeUndefined();
    expect(errorOf({ ...BASE, max_batch_size: 0, input: [{ ...input, dims: [1], reshape: {} }] })?.message).toBe(
      "model input 'IN' has different size for dims and reshape",
    );
  });
});

import type { ModelConfig } from '@nereid/model-config';
import { InferenceError } from '@nereid/protocol';
import { autoCompleteFromOnnx } from './auto-complete';
import type { OnnxModelInfo, OnnxValueInfo } from './onnx-model-info';

const tensor = (name: string, elemType: number, dims: number[]): OnnxValueInfo => ({ name, isTensor: true, elemType, dims });

const batchable: OnnxModelInfo = {
  inputs: [tensor('A', 1, [-1, 4]), tensor('B', 7, [-1, 4])],
  outputs: [tensor('SUM', 1, [-1, 4])],
};
const fixed: OnnxModelInfo = { inputs: [tensor('X', 1, [2, 3])], outputs: [tensor('Y', 1, [2, 3])] };

describe('autoCompleteFromOnnx', () => {
  it('fills everything for a config-less batchable model', () => {
    expect(autoCompleteFromOnnx({ name: 'm' }, batchable, 4)).toEqual({
      name: 'm',
      max_batch_size: 4,
      dynamic_batching: {},
      input: [
        { name: 'A', data_type: 'TYPE_FP32', dims: [4] },
        { name: 'B', data_type: 'TYPE_INT64', dims: [4] },
      ],
      output: [{ name: 'SUM', data_type: 'TYPE_FP32', dims: [4] }],
    });
  });

  it('gives max_batch_size 0 and full dims for a model with a fixed first dim', () => {
    const c = autoCompleteFromOnnx({ name: 'm' }, fixed, 4);
    expect(c.max_batch_size).toBe(0);
    expect(c.dynamic_batching).toBeUndefined();
    expect(c.input).toEqual([{ name: 'X', data_type: 'TYPE_FP32', dims: [2, 3] }]);
  });

  it('keeps what a partial config specifies and fills the rest', () => {
    const config: ModelConfig = { name: 'm', max_batch_size: 16, input: [{ name: 'A', data_type: 'TYPE_FP32', dims: [4] }] };
    const c = autoCompleteFromOnnx(config, batchable, 4);
    expect(c.max_batch_size).toBe(16);
    expect(c.input).toEqual(config.input);
    expect(c.output).toEqual([{ name: 'SUM', data_type: 'TYPE_FP32', dims: [4] }]);
    expect(config.output).toBeUndefined();
  });

  it('leaves a config that lists inputs and outputs untouched', () => {
    const config: ModelConfig = { name: 'm', input: [{ name: 'A' }], output: [{ name: 'SUM' }] };
    expect(autoCompleteFromOnnx(config, batchable, 4)).toBe(config);
  });

  it('respects an explicit max_batch_size of 0 on a batchable model', () => {
    const c = autoCompleteFromOnnx({ name: 'm', max_batch_size: 0 }, batchable, 4);
    expect(c.max_batch_size).toBe(0);
    expect(c.dynamic_batching).toBeUndefined();
    expect(c.input?.[0].dims).toEqual([-1, 4]);
  });

  it('does not add a dynamic batcher next to a sequence batcher or for max_batch_size 1', () => {
    expect(autoCompleteFromOnnx({ name: 'm', sequence_batching: {} }, batchable, 4).dynamic_batching).toBeUndefined();
    expect(autoCompleteFromOnnx({ name: 'm' }, batchable, 1).dynamic_batching).toBeUndefined();
  });

  it('rejects a non-zero max_batch_size for a model that cannot batch', () => {
    expect(() => autoCompleteFromOnnx({ name: 'm', max_batch_size: 8 }, fixed, 4)).toThrow(
      new InferenceError(
        'INVALID_ARG',
        "autofill failed for model 'm': model does not support batching while non-zero max_batch_size is specified",
      ),
    );
  });

  it('gives a batched scalar dims [1] with an empty reshape', () => {
    const info: OnnxModelInfo = { inputs: [tensor('S', 6, [-1])], outputs: [tensor('T', 6, [-1])] };
    const c = autoCompleteFromOnnx({ name: 'm' }, info, 8);
    expect(c.input).toEqual([{ name: 'S', data_type: 'TYPE_INT32', dims: [1], reshape: { shape: [] } }]);
  });

  it('names the tensor when the graph does not declare a shape or uses a non-tensor type', () => {
    const noShape: OnnxModelInfo = { inputs: [{ name: 'X', isTensor: true, elemType: 1 }], outputs: [] };
    expect(() => autoCompleteFromOnnx({ name: 'm' }, noShape, 4)).toThrow(/does not declare the shape of 'X'/);
    const seq: OnnxModelInfo = { inputs: [{ name: 'L', isTensor: false, elemType: 0 }], outputs: [] };
    expect(() => autoCompleteFromOnnx({ name: 'm' }, seq, 4)).toThrow(/'L' is not a tensor/);
  });
  it('leaves sequence controls and implicit states out of the inputs and outputs it fills', () => {
    const accumulator: OnnxModelInfo = {
      inputs: ['INPUT', 'START', 'READY', 'ACC_IN'].map((n) => tensor(n, 6, [-1, 1])),
      outputs: ['OUTPUT', 'ACC_OUT'].map((n) => tensor(n, 6, [-1, 1])),
    };
    const config: ModelConfig = {
      name: 'acc',
      max_batch_size: 8,
      sequence_batching: {
        control_input: [
          { name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', int32_false_true: [0, 1] }] },
          { name: 'READY', control: [{ kind: 'CONTROL_SEQUENCE_READY', int32_false_true: [0, 1] }] },
        ],
        state: [{ input_name: 'ACC_IN', output_name: 'ACC_OUT', data_type: 'TYPE_INT32', dims: [1] }],
      },
    };
    const c = autoCompleteFromOnnx(config, accumulator, 4);
    expect(c.input).toEqual([{ name: 'INPUT', data_type: 'TYPE_INT32', dims: [1] }]);
    expect(c.output).toEqual([{ name: 'OUTPUT', data_type: 'TYPE_INT32', dims: [1] }]);
    expect(c.dynamic_batching).toBeUndefined();
  });
});

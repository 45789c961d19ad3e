import type { ModelConfig } from '@nereid/model-config';
import { newInferenceRequest, type InferenceRequest } from '@nereid/protocol';
import type { DataType, Tensor } from '@nereid/tensor';
import { modelIo, validateRequest } from './request-validation';

const simple: ModelConfig = {
  name: 'simple',
  max_batch_size: 8,
  input: [
    { name: 'INPUT0', data_type: 'TYPE_INT32', dims: [16] },
    { name: 'INPUT1', data_type: 'TYPE_INT32', dims: [16] },
  ],
  output: [
    { name: 'OUTPUT0', data_type: 'TYPE_INT32', dims: [16] },
    { name: 'OUTPUT1', data_type: 'TYPE_INT32', dims: [16] },
  ],
};

const flat: ModelConfig = {
  name: 'flat',
  max_batch_size: 0,
  input: [
    { name: 'A', data_type: 'TYPE_FP32', dims: [2, -1] },
    { name: 'B', data_type: 'TYPE_FP32', dims: [1], optional: true },
  ],
  output: [{ name: 'C', data_type: 'TYPE_FP32', dims: [2, -1] }],
};

function tensor(name: string, shape: number[], datatype: DataType = 'INT32'): Tensor {
  const count = shape.reduce((a, b) => a * b, 1);
  return { name, datatype, shape, data: datatype === 'FP32' ? new Float32Array(count) : new Int32Array(count) };
}

function req(inputs: Tensor[], extra: Partial<InferenceRequest> = {}): InferenceRequest {
  const r = newInferenceRequest('simple', -1);
  r.inputs = inputs;
  Object.assign(r, extra);
  return r;
}

const ok = () => [tensor('INPUT0', [1, 16]), tensor('INPUT1', [1, 16])];

function errorOf(r: InferenceRequest, config: ModelConfig = simple): { code: string; message: string } {
  try {
    validateRequest(r, config, modelIo(config));
  } catch (e) {
    return { code: (e as { code: string }).code, message: (e as Error).message };
  }
  throw new Error('expected the request to be refused');
}

describe("validateRequest: Triton's checks, order and words (core src/infer_request.cc, src/model.cc)", () => {
  it('accepts a valid request', () => {
    expect(() => validateRequest(req(ok()), simple, modelIo(simple))).not.toThrow();
    const f = req([tensor('A', [2, 3], 'FP32')]);
    expect(() => validateRequest(f, flat, modelIo(flat))).not.toThrow();
  });

  it.each<[string, InferenceRequest, string, ModelConfig]>([
    ['a duplicate input', req([...ok(), tensor('INPUT0', [1, 16])], { id: 'r7' }), "[request id: r7] input 'INPUT0' already exists in request", simple],
    [
      'a duplicate requested output',
      req(ok(), { outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT0' }] }),
      "[request id: <id_unknown>] output 'OUTPUT0' already exists in request",
      simple,
    ],
    ['an unknown requested output', req(ok(), { outputs: [{ name: 'OUT9' }] }), "unexpected inference output 'OUT9' for model 'simple'", simple],
    [
      'a missing input',
      req([tensor('INPUT0', [1, 16])]),
      "[request id: <id_unknown>] expected 2 inputs but got 1 inputs for model 'simple'. Got input(s) ['INPUT0'], " +
        "but missing required input(s) ['INPUT1']. Please provide all required input(s).",
      simple,
    ],
    [
      'no input at all',
      req([]),
      "[request id: <id_unknown>] expected 2 inputs but got 0 inputs for model 'simple'. Got input(s) [], " +
        "but missing required input(s) ['INPUT0','INPUT1']. Please provide all required input(s).",
      simple,
    ],
    [
      'one input too many',
      req([...ok(), tensor('INPUT9', [1, 16])]),
      "[request id: <id_unknown>] expected 2 inputs but got 3 inputs for model 'simple'. Got input(s) ['INPUT0','INPUT1','INPUT9'], " +
        'but missing required input(s) []. Please provide all required input(s).',
      simple,
    ],
    [
      'a required input replaced by an optional one',
      req([tensor('B', [1], 'FP32')]),
      "[request id: <id_unknown>] expected number of inputs between 1 and 2 but got 1 inputs for model 'flat'. Got input(s) ['B'], " +
        "but missing required input(s) ['A']. Please provide all required input(s).",
      flat,
    ],
    ['an unknown input', req([tensor('INPUT0', [1, 16]), tensor('INPUT9', [1, 16])]), "unexpected inference input 'INPUT9' for model 'simple'", simple],
    [
      'an input without a batch dimension',
      req([tensor('INPUT0', []), tensor('INPUT1', [1, 16])]),
      "[request id: <id_unknown>] input 'INPUT0' has no shape but model requires batch dimension for 'simple'",
      simple,
    ],
    [
      'batch sizes that differ',
      req([tensor('INPUT0', [1, 16]), tensor('INPUT1', [2, 16])]),
      "[request id: <id_unknown>] input 'INPUT1' batch size does not match other inputs for 'simple'",
      simple,
    ],
    [
      'a batch over max_batch_size',
      req([tensor('INPUT0', [9, 16]), tensor('INPUT1', [9, 16])]),
      "[request id: <id_unknown>] inference request batch-size must be <= 8 for 'simple'",
      simple,
    ],
    [
      'a batch of 0',
      req([tensor('INPUT0', [0, 16]), tensor('INPUT1', [0, 16])]),
      "[request id: <id_unknown>] inference request batch-size must be >= 1 for 'simple'",
      simple,
    ],
    [
      'a wrong datatype',
      req([tensor('INPUT0', [1, 16]), tensor('INPUT1', [1, 16], 'FP32')]),
      "[request id: <id_unknown>] inference input 'INPUT1' data-type is 'FP32', but model 'simple' expects 'INT32'",
      simple,
    ],
    [
      'a wrong shape (batching model: with the note)',
      req([tensor('INPUT0', [2, 8]), tensor('INPUT1', [2, 8])]),
      "[request id: <id_unknown>] unexpected shape for input 'INPUT0' for model 'simple'. Expected [-1,16], got [2,8]. " +
        'NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each ' +
        'input shape. If you want to specify the full shape including the batch dim in your input dims config, try ' +
        'setting max_batch_size to zero. See the model configuration docs for more info on max_batch_size.',
      simple,
    ],
    [
      'a wrong shape (model without batching: Triton ends with ". ")',
      req([tensor('A', [3, 3], 'FP32')]),
      "[request id: <id_unknown>] unexpected shape for input 'A' for model 'flat'. Expected [2,-1], got [3,3]. ",
      flat,
    ],
  ])('refuses %s', (_case, r, message, config) => {
    expect(errorOf(r, config)).toEqual({ code: 'INVALID_ARG', message });
  });

  it('checks in Triton order: outputs, then the input count, then names', () => {
    const r = req([tensor('INPUT9', [1, 16])], { outputs: [{ name: 'NOPE' }] });
    expect(errorOf(r).message).toBe("unexpected inference output 'NOPE' for model 'simple'");
    r.outputs = undefined;
    expect(errorOf(r).message).toMatch(/^\[request id: <id_unknown>\] expected 2 inputs but got 1 inputs/);
  });

  it('clips client text it repeats', () => {
    const long = 'N'.repeat(100_000);
    const r = req([tensor('INPUT0', [1, 16]), tensor(long, [1, 16])], { id: long });
    const { message } = errorOf(r);
    expect(message).toBe(`unexpected inference input '${'N'.repeat(256)}...' for model 'simple'`);
    const dup = errorOf(req([...ok(), tensor('INPUT0', [1, 16])], { id: long })).message;
    expect(dup).toBe(`[request id: ${'N'.repeat(256)}...] input 'INPUT0' already exists in request`);
  });
});

describe('validateRequest on a sequence model', () => {
  const accumulator: ModelConfig = {
    name: 'accumulator',
    max_batch_size: 8,
    input: [{ name: 'INPUT', data_type: 'TYPE_INT32', dims: [1] }],
    output: [{ name: 'OUTPUT', data_type: 'TYPE_INT32', dims: [1] }],
    sequence_batching: {
      control_input: [{ name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', int32_false_true: [0, 1] }] }],
      state: [{ input_name: 'ACC_IN', output_name: 'ACC_OUT', data_type: 'TYPE_INT32', dims: [1] }],
    },
  };
  const input = () => tensor('INPUT', [1, 1]);

  it('takes the client inputs alone (the batcher adds controls and states after validation)', () => {
    expect(() => validateRequest(req([input()]), accumulator, modelIo(accumulator))).not.toThrow();
  });

  it('lets a client ask for a state output only when the config lists it as an output too (Triton: for debugging)', () => {
    const asked = () => req([input()], { outputs: [{ name: 'ACC_OUT' }] });
    expect(errorOf(asked(), accumulator).message).toBe("unexpected inference output 'ACC_OUT' for model 'accumulator'");
    const listed = { ...accumulator, output: [...(accumulator.output ?? []), { name: 'ACC_OUT', data_type: 'TYPE_INT32', dims: [1] }] };
    expect(() => validateRequest(asked(), listed, modelIo(listed))).not.toThrow();
  });

  it('refuses control or state tensors sent by the client, as inputs the config does not have', () => {
    expect(errorOf(req([input(), tensor('START', [1, 1])]), accumulator).message).toBe(
      "[request id: <id_unknown>] expected 1 inputs but got 2 inputs for model 'accumulator'. Got input(s) ['INPUT','START'], but missing required input(s) []. Please provide all required input(s).",
    );
    expect(errorOf(req([tensor('ACC_IN', [1, 1])]), accumulator).message).toBe("unexpected inference input 'ACC_IN' for model 'accumulator'");
  });
});

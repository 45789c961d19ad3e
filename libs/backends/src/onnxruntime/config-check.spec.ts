import { readdirSync, readFileSync, existsSync } from 'node:fs';
import * as path from 'node:path';
import { parseModelConfig, type ModelConfig } from '@nereid/model-config';
import { autoCompleteFromOnnx } from './auto-complete';
import { checkConfigAgainstOnnx } from './config-check';
import { readOnnxModelInfo, type OnnxModelInfo } from './onnx-model-info';
import { FIXTURES, MODELS } from './onnxruntime.testing';

function infoOf(dir: string): OnnxModelInfo {
  return readOnnxModelInfo(readFileSync(path.join(dir, '1', 'model.onnx')));
}

function configOf(dir: string): ModelConfig {
  const file = path.join(dir, 'config.pbtxt');
  const parsed = existsSync(file) ? parseModelConfig(readFileSync(file, 'utf8'), file) : {};
  const config = { name: path.basename(dir), ...parsed };
  return autoCompleteFromOnnx(config, infoOf(dir), 4);
}

function check(dir: string, config: ModelConfig): () => void {
  return () => checkConfigAgainstOnnx(config, infoOf(dir), '1/model.onnx');
}

const onnxModels = [MODELS, FIXTURES].flatMap((root) =>
  readdirSync(root)
    .map((name) => path.join(root, name))
    .filter((dir) => existsSync(path.join(dir, '1', 'model.onnx'))),
);

describe('checkConfigAgainstOnnx', () => {
  it.each(onnxModels.map((dir) => [path.relative(path.dirname(MODELS), dir), dir]))('accepts the config shipped with %s', (_name, dir) => {
    expect(check(dir, configOf(dir))).not.toThrow();
  });

  const seqDir = path.join(FIXTURES, 'simple_dyna_sequence');

  it('counts sequence controls as model inputs (simple_dyna_sequence: INPUT + START, END, READY, CORRID)', () => {
    const config = configOf(seqDir);
    expect(config.input).toHaveLength(1);
    expect(check(seqDir, config)).not.toThrow();
    const noControls = { ...config, sequence_batching: { ...config.sequence_batching, control_input: [] } };
    expect(check(seqDir, noControls)).toThrow(
      "unable to load model 'simple_dyna_sequence', configuration expects 1 inputs, model provides 5 (ONNX file '1/model.onnx')",
    );
  });

  it('refuses an input declared with another datatype than the graph has, naming both types and the file', () => {
    const dir = path.join(MODELS, 'simple');
    const config = configOf(dir);
    const wrong = { ...config, input: config.input?.map((i) => (i.name === 'INPUT1' ? { ...i, data_type: 'TYPE_FP32' } : i)) };
    expect(check(dir, wrong)).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARG',
        message: "unable to load model 'simple', configuration expects datatype TYPE_FP32 for input 'INPUT1', model provides TYPE_INT32 (ONNX file '1/model.onnx')",
      }),
    );
  });

  it('refuses an output datatype, an output the graph lacks, and dims that do not match', () => {
    const dir = path.join(MODELS, 'simple');
    const config = configOf(dir);
    const outType = { ...config, output: config.output?.map((o) => ({ ...o, data_type: 'TYPE_INT64' })) };
    expect(check(dir, outType)).toThrow("configuration expects datatype TYPE_INT64 for output 'OUTPUT0', model provides TYPE_INT32");
    const extra = { ...config, output: [...(config.output ?? []), { name: 'OUTPUT9', data_type: 'TYPE_INT32', dims: [16] }] };
    expect(check(dir, extra)).toThrow("unexpected inference output 'OUTPUT9', allowed outputs are: OUTPUT0, OUTPUT1");
    const dims = { ...config, input: config.input?.map((i) => ({ ...i, dims: [8] })) };
    expect(check(dir, dims)).toThrow(
      "model 'simple', tensor 'INPUT0': the model expects 2 dimensions (shape [-1,16]) but the model configuration specifies 2 dimensions (an initial batch dimension because max_batch_size > 0 followed by the explicit tensor shape, making complete shape [-1,8])",
    );
    const noBatch = { ...config, max_batch_size: 0 };
    expect(check(dir, noBatch)).toThrow("the model expects 2 dimensions (shape [-1,16]) but the model configuration specifies 1 dimensions (shape [16])");
  });

  it('checks a control tensor\'s datatype and dims, and that the graph has it', () => {
    const config = configOf(seqDir);
    const controls = config.sequence_batching?.control_input ?? [];
    const fp32Start = controls.map((c) =>
      c.name === 'START' ? { ...c, control: [{ kind: 'CONTROL_SEQUENCE_START', fp32_false_true: [0, 1] }] } : c,
    );
    expect(check(seqDir, { ...config, sequence_batching: { ...config.sequence_batching, control_input: fp32Start } })).toThrow(
      "unable to load model 'simple_dyna_sequence', sequence control 'START', the model expects data-type INT32 but the model configuration specifies data-type TYPE_FP32",
    );
    const corrid = controls.map((c) =>
      c.control?.[0]?.kind === 'CONTROL_SEQUENCE_CORRID' ? { ...c, control: [{ kind: 'CONTROL_SEQUENCE_CORRID', data_type: 'TYPE_STRING' }] } : c,
    );
    expect(check(seqDir, { ...config, sequence_batching: { ...config.sequence_batching, control_input: corrid } })).toThrow(
      'the model expects data-type UINT64 but the model configuration specifies data-type TYPE_STRING',
    );
    const missing = [...controls, { name: 'GONE', control: [{ kind: 'CONTROL_SEQUENCE_START', int32_false_true: [0, 1] }] }];
    expect(check(seqDir, { ...config, sequence_batching: { ...config.sequence_batching, control_input: missing } })).toThrow(
      expect.objectContaining({ code: 'INTERNAL', message: expect.stringContaining("configuration specified sequence control 'GONE', but model does not provide that input") }),
    );
    const unbatched = { ...config, max_batch_size: 0 };
    expect(check(seqDir, unbatched)).toThrow("sequence control 'START' in model has dims [-1,1] but dims [1] is expected");
  });

  it('accepts a sequence model whose inputs and outputs were auto-completed (controls and states left out)', () => {
    const dir = path.join(FIXTURES, 'accumulator_short_idle');
    const { input: _input, output: _output, ...bare } = configOf(dir);
    const completed = autoCompleteFromOnnx(bare, infoOf(dir), 4);
    expect(completed.input?.map((i) => i.name)).toEqual(['INPUT']);
    expect(check(dir, completed)).not.toThrow();
  });

  it('checks implicit states: both tensors in the graph, with the state\'s datatype', () => {
    const dir = path.join(FIXTURES, 'accumulator_short_idle');
    const config = configOf(dir);
    expect(check(dir, config)).not.toThrow();
    const states = config.sequence_batching?.state ?? [];
    const fp32 = states.map((s) => ({ ...s, data_type: 'TYPE_FP32' }));
    expect(check(dir, { ...config, sequence_batching: { ...config.sequence_batching, state: fp32 } })).toThrow(
      "unable to load model 'accumulator_short_idle', configuration expects datatype TYPE_FP32 for output state 'ACC_OUT', model provides TYPE_INT32",
    );
    const renamed = states.map((s) => ({ ...s, output_name: 'ACC_NEXT' }));
    expect(check(dir, { ...config, sequence_batching: { ...config.sequence_batching, state: renamed } })).toThrow(
      "unexpected inference output 'ACC_NEXT', allowed outputs are: ACC_OUT, OUTPUT",
    );
    const renamedInput = states.map((s) => ({ ...s, input_name: 'ACC_PREV' }));
    expect(check(dir, { ...config, sequence_batching: { ...config.sequence_batching, state: renamedInput } })).toThrow(
      "unexpected inference input 'ACC_PREV', allowed inputs are: ACC_IN, INPUT, READY, START",
    );
    const dims = states.map((s) => ({ ...s, dims: [2] }));
    expect(check(dir, { ...config, sequence_batching: { ...config.sequence_batching, state: dims } })).toThrow(
      "tensor 'ACC_OUT': the model expects 2 dimensions (shape [-1,1])",
    );
  });
});

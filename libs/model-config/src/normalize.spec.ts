import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fillServerSide, normalizeModelConfig, type NormalizeOptions } from './normalize';
import type { ModelConfig } from './types';

const CPU_ONLY: NormalizeOptions = {
  defaultCpuInstanceCount: (b) => (b === 'onnxruntime' || b === 'tensorflow' ? 2 : 1),
  gpuCount: 0,
};
const TWO_GPUS: NormalizeOptions = { ...CPU_ONLY, gpuCount: 2 };

describe('normalizeModelConfig', () => {
  it('fills version policy, preferred batch size, pinned memory and one CPU group; input untouched', () => {
    const input: ModelConfig = { name: 'm', backend: 'onnxruntime', max_batch_size: 8, dynamic_batching: {} };
    const frozen = JSON.stringify(input);
    const out = normalizeModelConfig(input, CPU_ONLY);
    expect(JSON.stringify(input)).toBe(frozen);
    expect(out).toEqual({
      name: 'm',
      backend: 'onnxruntime',
      max_batch_size: 8,
      version_policy: { latest: { num_versions: 1 } },
      dynamic_batching: { preferred_batch_size: [8] },
      optimization: { input_pinned_memory: { enable: true }, output_pinned_memory: { enable: true } },
      instance_group: [{ name: 'm', kind: 'KIND_CPU', count: 2 }],
    });
  });

  it('keeps explicit values', () => {
    const out = normalizeModelConfig(
      {
        name: 'm',
        backend: 'python',
        max_batch_size: 8,
        version_policy: { all: {} },
        dynamic_batching: { preferred_batch_size: [2] },
        optimization: { input_pinned_memory: { enable: false } },
      },
      CPU_ONLY,
    );
    expect(out.version_policy).toEqual({ all: {} });
    expect(out.dynamic_batching?.preferred_batch_size).toEqual([2]);
    expect(out.optimization).toEqual({ input_pinned_memory: { enable: false }, output_pinned_memory: { enable: true } });
    expect(out.instance_group).toEqual([{ name: 'm', kind: 'KIND_CPU', count: 1 }]);
  });

  it('does not add preferred sizes for non-batching models', () => {
    const out = normalizeModelConfig({ name: 'm', backend: 'python', dynamic_batching: {} }, CPU_ONLY);
    expect(out.dynamic_batching).toEqual({});
  });

  it('defaults sequence idle time and oldest preferred size', () => {
    const out = normalizeModelConfig(
      { name: 'm', backend: 'python', max_batch_size: 4, sequence_batching: { max_sequence_idle_microseconds: 0, oldest: { max_candidate_sequences: 2 } } },
      CPU_ONLY,
    );
    expect(out.sequence_batching).toEqual({
      max_sequence_idle_microseconds: 1000000,
      oldest: { max_candidate_sequences: 2, preferred_batch_size: [4] },
    });
    const direct = normalizeModelConfig({ name: 'm', backend: 'python', sequence_batching: { max_sequence_idle_microseconds: 5 } }, CPU_ONLY);
    expect(direct.sequence_batching).toEqual({ max_sequence_idle_microseconds: 5 });
  });

  it('names groups <model>_<index>, resolves KIND_AUTO and fills counts and GPUs', () => {
    const config: ModelConfig = {
      name: 'm',
      backend: 'onnxruntime',
      instance_group: [{ kind: 'KIND_AUTO' }, { name: 'mine', kind: 'KIND_CPU' }, { kind: 'KIND_GPU', count: 3 }, { kind: 'KIND_MODEL', count: 0 }],
    };
    expect(normalizeModelConfig(config, CPU_ONLY).instance_group).toEqual([
      { name: 'm_0', kind: 'KIND_CPU', count: 2 },
      { name: 'mine', kind: 'KIND_CPU', count: 2 },
      { name: 'm_2', kind: 'KIND_GPU', count: 3 },
      { name: 'm_3', kind: 'KIND_MODEL', count: 1 },
    ]);
    expect(normalizeModelConfig(config, TWO_GPUS).instance_group).toEqual([
      { name: 'm_0', kind: 'KIND_GPU', count: 1, gpus: [0, 1] },
      { name: 'mine', kind: 'KIND_CPU', count: 2 },
      { name: 'm_2', kind: 'KIND_GPU', count: 3, gpus: [0, 1] },
      { name: 'm_3', kind: 'KIND_MODEL', count: 1 },
    ]);
  });

  it('adds one AUTO group named after the model that becomes GPU when GPUs exist', () => {
    const out = normalizeModelConfig({ name: 'm', backend: 'python' }, TWO_GPUS);
    expect(out.instance_group).toEqual([{ name: 'm', kind: 'KIND_GPU', count: 1, gpus: [0, 1] }]);
  });

  it('leaves ensembles without pinned memory or instance groups', () => {
    const out = normalizeModelConfig({ name: 'e', platform: 'ensemble', ensemble_scheduling: { step: [] } }, CPU_ONLY);
    expect(out).toEqual({ name: 'e', platform: 'ensemble', ensemble_scheduling: { step: [] }, version_policy: { latest: { num_versions: 1 } } });
  });
});

describe('fillServerSide', () => {
  let root: string;
  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-fill-'));
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  function modelWith(name: string, files: Record<string, string[]>): string[] {
    const dirs: string[] = [];
    for (const [version, names] of Object.entries(files)) {
      const dir = path.join(root, name, version);
      fs.mkdirSync(dir, { recursive: true });
      for (const f of names) fs.writeFileSync(path.join(dir, f), '');
      dirs.push(dir);
    }
    return dirs;
  }

  it.each([
    ['model.onnx', { backend: 'onnxruntime', platform: 'onnxruntime_onnx', default_model_filename: 'model.onnx' }],
    ['model.py', { backend: 'python', default_model_filename: 'model.py' }],
    ['model.plan', { backend: 'tensorrt', platform: 'tensorrt_plan', default_model_filename: 'model.plan' }],
    ['model.pt', { backend: 'pytorch', platform: 'pytorch_libtorch', default_model_filename: 'model.pt' }],
    ['model.savedmodel', { backend: 'tensorflow', platform: 'tensorflow_savedmodel', default_model_filename: 'model.savedmodel' }],
    ['model.graphdef', { backend: 'tensorflow', platform: 'tensorflow_graphdef', default_model_filename: 'model.graphdef' }],
    ['model.xml', { backend: 'openvino', default_model_filename: 'model.xml' }],
  ])('derives the backend from %s in the lowest version directory', (file, expected) => {
    const name = `detect_${file.replace('.', '_')}`;
    const dirs = modelWith(name, { '1': [file], '2': ['model.py'] });
    expect(fillServerSide({}, { modelName: name, versionDirs: dirs })).toEqual({ name, ...expected });
  });

  it('prefers ONNX over Python files in the same directory (detection order)', () => {
    const dirs = modelWith('both', { '3': ['model.py', 'model.onnx'] });
    expect(fillServerSide({}, { modelName: 'both', versionDirs: dirs }).backend).toBe('onnxruntime');
  });

  it('pairs platform and backend both ways and keeps explicit file names', () => {
    const ctx = { modelName: 'm', versionDirs: [] };
    expect(fillServerSide({ platform: 'onnxruntime_onnx' }, ctx)).toEqual({
      name: 'm', platform: 'onnxruntime_onnx', backend: 'onnxruntime', default_model_filename: 'model.onnx',
    });
    expect(fillServerSide({ backend: 'onnxruntime', default_model_filename: 'my.onnx' }, ctx)).toEqual({
      name: 'm', backend: 'onnxruntime', platform: 'onnxruntime_onnx', default_model_filename: 'my.onnx',
    });
    expect(fillServerSide({ default_model_filename: 'model.py' }, ctx)).toEqual({ name: 'm', backend: 'python', default_model_filename: 'model.py' });
  });

  it('leaves ensembles alone apart from the name', () => {
    expect(fillServerSide({ platform: 'ensemble' }, { modelName: 'e', versionDirs: [] })).toEqual({ name: 'e', platform: 'ensemble' });
  });

  it('falls back to the <name>.<backend> form, else fails with Triton wording', () => {
    expect(fillServerSide({}, { modelName: 'add.identity', versionDirs: [] })).toEqual({ name: 'add.identity', backend: 'identity' });
    expect(() => fillServerSide({}, { modelName: 'plain', versionDirs: modelWith('plain', { '1': ['weights.bin'] }) })).toThrow(
      "Invalid model name: Could not determine backend for model 'plain' with no backend in model configuration. " +
        "Expected model name of the form 'model.<backend_name>'.",
    );
  });

  it('requires the configured name to equal the directory name', () => {
    expect(() => fillServerSide({ name: 'other', backend: 'python' }, { modelName: 'm', versionDirs: [] })).toThrow(
      "unexpected directory name 'm' for model 'other', directory name must equal model name",
    );
  });

  it('does not mutate its input', () => {
    const input: ModelConfig = { backend: 'python' };
    fillServerSide(input, { modelName: 'm', versionDirs: [] });
    expect(input).toEqual({ backend: 'python' });
  });
});

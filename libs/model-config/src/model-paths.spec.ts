import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { ModelConfig } from './types';
import { checkConfigPaths, resolveInside, resolvePathParameter } from './model-paths';

/** <tmp>/{repo/m/{1/model.onnx, labels.txt, sub/, warmup/, link-out -> outside, link-in -> sub}, outside/secret.txt} */
const roots: string[] = [];
afterAll(() => roots.forEach((root) => rmSync(root, { recursive: true, force: true })));

function layout(): { root: string; modelDir: string; versionDir: string; outside: string } {
  const root = mkdtempSync(path.join(tmpdir(), 'nereid-paths-'));
  roots.push(root);
  const modelDir = path.join(root, 'repo', 'm');
  const versionDir = path.join(modelDir, '1');
  const outside = path.join(root, 'outside');
  mkdirSync(versionDir, { recursive: true });
  mkdirSync(path.join(modelDir, 'sub', 'deep'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(path.join(versionDir, 'model.onnx'), 'x');
  writeFileSync(path.join(modelDir, 'labels.txt'), 'a\nb');
  writeFileSync(path.join(outside, 'secret.txt'), 'secret');
  symlinkSync(outside, path.join(modelDir, 'link-out'));
  symlinkSync(path.join(modelDir, 'sub', 'deep'), path.join(modelDir, 'link-in'));
  symlinkSync(path.join(outside, 'secret.txt'), path.join(modelDir, 'secret-link.txt'));
  return { root, modelDir, versionDir, outside };
}

const escapes = (what: string) => expect.objectContaining({ code: 'INVALID_ARG', message: `${what} is outside model directory` });

describe('resolveInside', () => {
  const { root, modelDir } = layout();

  it('returns the joined path for paths inside the folder, existing or not', async () => {
    expect(await resolveInside(modelDir, 'labels.txt', 'x')).toBe(path.join(modelDir, 'labels.txt'));
    expect(await resolveInside(modelDir, 'sub/../labels.txt', 'x')).toBe(path.join(modelDir, 'labels.txt'));
    expect(await resolveInside(modelDir, 'missing/file.txt', 'x')).toBe(path.join(modelDir, 'missing/file.txt'));
    expect(await resolveInside(modelDir, 'link-in/../x', 'x')).toBe(path.join(modelDir, 'x'));
  });

  it('refuses paths leaving the folder as written', async () => {
    for (const p of ['../../../../../../etc/passwd', '..', '1/../../m2/labels.txt', 'missing/../../x']) {
      await expect(resolveInside(modelDir, p, `label '${p}'`)).rejects.toEqual(escapes(`label '${p}'`));
    }
  });

  it('refuses paths leaving the folder through symbolic links', async () => {
    for (const p of ['link-out/secret.txt', 'secret-link.txt', 'link-out']) {
      await expect(resolveInside(modelDir, p, 'w')).rejects.toEqual(escapes('w'));
    }
  });

  it('refuses absolute paths and control characters, naming no server path', async () => {
    for (const p of ['/etc/passwd', path.join(modelDir, 'labels.txt'), 'a\0b', 'a\nb']) {
      const err = await resolveInside(modelDir, p, 'w').catch((e: Error) => e);
      expect(err).toMatchObject({ code: 'INVALID_ARG', message: 'w must be a relative path inside the model directory' });
    }
    const err = await resolveInside(modelDir, '../../outside/secret.txt', 'w').catch((e: Error) => e);
    expect((err as Error).message).not.toContain(root);
  });
});

describe('resolvePathParameter', () => {
  const { modelDir, outside } = layout();

  it('takes $$TRITON_MODEL_DIRECTORY and relative paths inside the model folder', async () => {
    expect(await resolvePathParameter(modelDir, '$$TRITON_MODEL_DIRECTORY/env.tar.gz', 'e', false)).toBe(path.join(modelDir, 'env.tar.gz'));
    expect(await resolvePathParameter(modelDir, 'env', 'e', false)).toBe(path.join(modelDir, 'env'));
    await expect(resolvePathParameter(modelDir, '$$TRITON_MODEL_DIRECTORY/../../outside', 'e', true)).rejects.toEqual(escapes('e'));
    await expect(resolvePathParameter(modelDir, 'link-out/env.tar.gz', 'e', true)).rejects.toEqual(escapes('e'));
  });

  it('takes an absolute path elsewhere only from the repository', async () => {
    expect(await resolvePathParameter(modelDir, outside, 'e', true)).toBe(outside);
    await expect(resolvePathParameter(modelDir, outside, 'e', false)).rejects.toMatchObject({
      code: 'INVALID_ARG',
      message: 'e must name a path inside the model directory (relative, or starting with $$TRITON_MODEL_DIRECTORY)',
    });
  });
});

describe('checkConfigPaths', () => {
  const { modelDir, versionDir } = layout();
  const folders = { modelDir, versionDirs: [versionDir] };
  const check = (config: ModelConfig, fromOverride = true) => checkConfigPaths({ name: 'm', ...config }, folders, fromOverride);

  it('passes a config whose files are inside the model folder', async () => {
    await expect(
      check({
        default_model_filename: 'model.onnx',
        output: [{ name: 'OUT', label_filename: 'labels.txt' }],
        model_warmup: [{ name: 'w', inputs: { IN: { input_data_file: 'in.bin' } } }],
        parameters: { EXECUTION_ENV_PATH: { string_value: '$$TRITON_MODEL_DIRECTORY/env.tar.gz' } },
      }),
    ).resolves.toBeUndefined();
  });

  it('refuses every path field that leaves it', async () => {
    const up = '../../../../../../etc/passwd';
    await expect(check({ output: [{ name: 'OUT', label_filename: up }] })).rejects.toEqual(
      escapes(`label file path '${up}' for output 'OUT' in model 'm'`),
    );
    await expect(check({ default_model_filename: '../../outside/secret.txt' })).rejects.toEqual(
      escapes("model file name '../../outside/secret.txt' of model 'm'"),
    );
    await expect(check({ cc_model_filenames: { '7.0': '../x.plan' } })).rejects.toEqual(escapes("model file name '../x.plan' of model 'm'"));
    await expect(check({ model_warmup: [{ name: 'w', inputs: { IN: { input_data_file: '../../x' } } }] })).rejects.toEqual(
      escapes("input_data_file '../../x' of input 'IN' in warmup 'w' of model 'm'"),
    );
    await expect(
      check({ sequence_batching: { state: [{ initial_state: [{ name: 's', data_file: '../../../x' }] }] } }),
    ).rejects.toEqual(escapes("data_file '../../../x' of initial state 's' in model 'm'"));
    await expect(check({ parameters: { EXECUTION_ENV_PATH: { string_value: '/usr' } } })).rejects.toMatchObject({ code: 'INVALID_ARG' });
    await expect(check({ parameters: { EXECUTION_ENV_PATH: { string_value: '/usr' } } }, false)).resolves.toBeUndefined();
  });
});

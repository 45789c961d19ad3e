import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, promises as fsp } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { InferenceError } from '@nereid/protocol';
import { resolvePathParameter, type ModelConfig } from '@nereid/model-config';

/** The interpreter (and environment) a model's stubs run with. */
export interface PythonRuntime {
  python: string;
  env?: NodeJS.ProcessEnv;
}

const extracted = new Map<string, Promise<string>>();

/**
 * Resolves config `parameters.EXECUTION_ENV_PATH`: a directory is used as is; any other file is
 * treated as a (conda-pack / venv-pack) tar archive, extracted once per archive path and mtime under
 * `<tmp>/nereid_python_env/`. `$$TRITON_MODEL_DIRECTORY` is replaced by the model directory;
 * relative paths are taken from the model directory. The stub runs `<env>/bin/python3` with
 * `<env>/bin` first on PATH and `<env>/lib` first on LD_LIBRARY_PATH.
 */
export async function resolvePythonRuntime(config: ModelConfig, modelDir: string, fallback: string): Promise<PythonRuntime> {
  const raw = config.parameters?.EXECUTION_ENV_PATH?.string_value;
  if (!raw) return { python: fallback };
  // Relative paths and $$TRITON_MODEL_DIRECTORY stay inside the model folder; the core refuses
  // absolute paths in a client's config override. Errors show the path as the config wrote it.
  const what = `EXECUTION_ENV_PATH '${raw}' of model '${config.name}'`;
  const envPath = await resolvePathParameter(modelDir, raw, what, true);
  const stat = await fsp.stat(envPath).catch(() => undefined);
  if (!stat) throw InferenceError.invalidArg(`${what} does not exist`);
  const envDir = stat.isDirectory() ? envPath : await extractOnce(envPath, stat.mtimeMs);
  const python = ['bin/python3', 'bin/python'].map((p) => path.join(envDir, p)).find((p) => existsSync(p));
  if (!python) throw InferenceError.invalidArg(`${what} has no bin/python3`);
  const prepend = (dir: string, current: string | undefined): string => (current ? `${dir}${path.delimiter}${current}` : dir);
  return {
    python,
    env: {
      PATH: prepend(path.join(envDir, 'bin'), process.env.PATH),
      LD_LIBRARY_PATH: prepend(path.join(envDir, 'lib'), process.env.LD_LIBRARY_PATH),
      CONDA_PREFIX: envDir,
    },
  };
}

function extractOnce(archive: string, mtimeMs: number): Promise<string> {
  const key = `${archive}@${mtimeMs}`;
  let job = extracted.get(key);
  if (!job) {
    job = extract(archive, mtimeMs);
    extracted.set(key, job);
    job.catch(() => extracted.delete(key));
  }
  return job;
}

async function extract(archive: string, mtimeMs: number): Promise<string> {
  const id = createHash('sha1').update(`${archive}@${mtimeMs}`).digest('hex').slice(0, 16);
  const root = path.join(os.tmpdir(), 'nereid_python_env');
  const target = path.join(root, id);
  if (existsSync(path.join(target, '.nereid-complete'))) return target;
  const work = await fsp.mkdtemp(path.join(root + '-'));
  await run('tar', ['-xf', archive, '-C', work], `cannot extract EXECUTION_ENV_PATH archive '${archive}'`);
  const unpack = path.join(work, 'bin', 'conda-unpack');
  if (existsSync(unpack)) await run(unpack, [], `conda-unpack failed in '${work}'`);
  await fsp.writeFile(path.join(work, '.nereid-complete'), '');
  await fsp.mkdir(root, { recursive: true });
  await fsp.rm(target, { recursive: true, force: true });
  await fsp.rename(work, target);
  return target;
}

function run(cmd: string, args: string[], failure: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', (e) => reject(InferenceError.internal(`${failure}: ${e.message}`)));
    child.on('exit', (code) => (code === 0 ? resolve() : reject(InferenceError.internal(`${failure}: ${err.trim() || `exit code ${code}`}`))));
  });
}

import * as path from 'node:path';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { InferenceError } from '@nereid/protocol';
import { resolveInside, type ModelConfig } from '@nereid/model-config';
import type { AutoCompleteContext, Backend, LoadContext, ModelInstance } from '../backend';
import { runAutoComplete } from './auto-complete';
import { resolvePythonRuntime } from './execution-env';
import { PythonModelInstance } from './python-instance';
import { SpareStubs } from './spare-stubs';
import type { LogFn, StubLaunch } from './stub-process';

/** How long a stub left by auto-complete waits for the model's first instance (default 30 s). */
const DEFAULT_SPARE_STUB_MS = 30_000;

/** Tensors of at least this many bytes cross to the stub through /dev/shm files (default 64 KiB). */
const DEFAULT_SHM_THRESHOLD = 64 * 1024;

export interface PythonBackendOptions {
  /** Interpreter for stubs without EXECUTION_ENV_PATH. Default: env NEREID_PYTHON, else `python3`. */
  pythonExecutable?: string;
  /**
   * `--backend-config=python,<k>=<v>` settings. Triton's shm-* / stub-timeout-seconds /
   * thread-pool-size keys are accepted and ignored; `nereid-shm-threshold-bytes` sets the size
   * from which tensors travel through shared-memory files; `nereid-spare-stub-timeout-ms` sets how
   * long the stub left by a model's auto-complete waits for the model's first instance to take it
   * over before it is finalized (default 30000; tests make it short).
   */
  backendConfig?: Record<string, string>;
  /** Backend-level log (auto-complete); instances log through their LoadContext. */
  log?: LogFn;
}

/** Runs models written for Triton's python backend, one stub process per instance. */
export class PythonBackend implements Backend {
  readonly name = 'python';
  readonly defaultModelFilename = 'model.py';
  readonly defaultCpuInstanceCount = 1;
  private readonly python: string;
  private readonly shmThreshold: number;
  private readonly log: LogFn;
  /**
   * Stubs left by auto-complete (python started, numpy and the model file imported), for the
   * model's first instance: starting python costs ~0.5 s of CPU here, and every python model would
   * pay it twice at load.
   */
  private readonly spares: SpareStubs;
  private interpreter?: Promise<{ python: string; env?: NodeJS.ProcessEnv }>;

  constructor(options: PythonBackendOptions = {}) {
    this.python = options.pythonExecutable ?? process.env.NEREID_PYTHON ?? 'python3';
    const threshold = Number(options.backendConfig?.['nereid-shm-threshold-bytes'] ?? DEFAULT_SHM_THRESHOLD);
    this.shmThreshold = Number.isFinite(threshold) && threshold > 0 ? threshold : DEFAULT_SHM_THRESHOLD;
    const spareMs = Number(options.backendConfig?.['nereid-spare-stub-timeout-ms'] ?? DEFAULT_SPARE_STUB_MS);
    this.spares = new SpareStubs(Number.isFinite(spareMs) && spareMs >= 0 ? spareMs : DEFAULT_SPARE_STUB_MS);
    this.log = options.log ?? (() => undefined);
  }

  /**
   * Asks the default interpreter where it lives now, so that a server whose repository holds
   * python models does not wait for it when they load (the serve command calls this at start).
   */
  warmUp(): void {
    void this.defaultInterpreter();
  }

  async autoComplete(ctx: AutoCompleteContext): Promise<ModelConfig> {
    const modelFile = await this.modelFile(ctx.config, ctx.versionDir);
    const launch = await this.launch(ctx.config, ctx.modelDir);
    const name = ctx.config.name ?? '';
    const log: LogFn = (level, message) => this.log(level, `[${name}] ${message}`);
    return runAutoComplete(launch, log, { modelFile, modelDir: ctx.modelDir, versionDir: ctx.versionDir, config: ctx.config }, (proc) =>
      this.spares.park(modelFile, proc),
    );
  }

  async loadInstance(ctx: LoadContext): Promise<ModelInstance> {
    checkForceCpuOnly(ctx.config);
    const launch = await this.launch(ctx.config, ctx.modelDir);
    const modelFile = await this.modelFile(ctx.config, ctx.versionDir);
    return PythonModelInstance.start({
      ctx,
      launch,
      modelFile,
      decoupled: ctx.config.model_transaction_policy?.decoupled === true,
      spare: this.spares.take(modelFile, launch),
    });
  }

  /** `<version dir>/<default_model_filename or model.py>`, which must stay inside the version folder. */
  private async modelFile(config: ModelConfig, versionDir: string): Promise<string> {
    const name = config.default_model_filename || this.defaultModelFilename;
    const file = await resolveInside(versionDir, name, `model file name '${name}' of model '${config.name ?? ''}'`);
    if (!existsSync(file)) {
      throw InferenceError.notFound(`unable to find '${file}' for model '${config.name ?? ''}'`);
    }
    return file;
  }

  private async launch(config: ModelConfig, modelDir: string): Promise<StubLaunch> {
    const runtime = await resolvePythonRuntime(config, modelDir, this.python);
    if (runtime.python === this.python && !runtime.env) {
      const real = await this.defaultInterpreter();
      return { python: real.python, env: real.env, shmThreshold: this.shmThreshold };
    }
    return { python: runtime.python, env: runtime.env, shmThreshold: this.shmThreshold };
  }

  /**
   * The interpreter that the default `python3` stands for, asked once. Where `python3` is a shim
   * (pyenv, asdf), each start through it ran a shell and the version manager first: ~0.3 s a stub
   * on the machines Nereid is measured on. The interpreter's folder goes first on the stubs' PATH,
   * as the shim would have put it.
   */
  private defaultInterpreter(): Promise<{ python: string; env?: NodeJS.ProcessEnv }> {
    this.interpreter ??= new Promise((resolve) => {
      execFile(this.python, ['-c', 'import sys; sys.stdout.write(sys.executable)'], { timeout: 30_000 }, (error, stdout) => {
        const real = error ? '' : String(stdout).trim();
        if (!real || !path.isAbsolute(real) || real === this.python) return resolve({ python: this.python });
        const dir = path.dirname(real);
        resolve({ python: real, env: { PATH: process.env.PATH ? `${dir}${path.delimiter}${process.env.PATH}` : dir } });
      });
    });
    return this.interpreter;
  }
}

function checkForceCpuOnly(config: ModelConfig): void {
  const value = config.parameters?.FORCE_CPU_ONLY_INPUT_TENSORS?.string_value;
  if (value === undefined) return;
  if (!['yes', 'no'].includes(value.toLowerCase())) {
    throw InferenceError.unsupported(`Incorrect value for FORCE_CPU_ONLY_INPUT_TENSORS: ${value}`);
  }
}

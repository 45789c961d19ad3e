import * as path from 'node:path';
import { existsSync } from 'node:fs';
import { InferenceError } from '@nereid/protocol';
import type { ModelConfig } from '@nereid/model-config';
import type { AutoCompleteContext, Backend, LoadContext, ModelInstance } from '../backend';
import { runAutoComplete } from './auto-complete';
import { resolvePythonRuntime } from './execution-env';
import { PythonModelInstance } from './python-instance';
import type { LogFn, StubLaunch } from './stub-process';

/** Tensors of at least this many bytes cross to the stub through /dev/shm files (default 64 KiB). */
const DEFAULT_SHM_THRESHOLD = 64 * 1024;

export interface PythonBackendOptions {
  /** Interpreter for stubs without EXECUTION_ENV_PATH. Default: env NEREID_PYTHON, else `python3`. */
  pythonExecutable?: string;
  /**
   * `--backend-config=python,<k>=<v>` settings. Triton's shm-* / stub-timeout-seconds /
   * thread-pool-size keys are accepted and ignored; `nereid-shm-threshold-bytes` sets the size
   * from which tensors travel through shared-memory files.
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

  constructor(options: PythonBackendOptions = {}) {
    this.python = options.pythonExecutable ?? process.env.NEREID_PYTHON ?? 'python3';
    const threshold = Number(options.backendConfig?.['nereid-shm-threshold-bytes'] ?? DEFAULT_SHM_THRESHOLD);
    this.shmThreshold = Number.isFinite(threshold) && threshold > 0 ? threshold : DEFAULT_SHM_THRESHOLD;
    this.log = options.log ?? (() => undefined);
  }

  async autoComplete(ctx: AutoCompleteContext): Promise<ModelConfig> {
    const modelFile = this.modelFile(ctx.config, ctx.versionDir);
    const launch = await this.launch(ctx.config, ctx.modelDir);
    const name = ctx.config.name ?? '';
    const log: LogFn = (level, message) => this.log(level, `[${name}] ${message}`);
    return runAutoComplete(launch, log, { modelFile, modelDir: ctx.modelDir, versionDir: ctx.versionDir, config: ctx.config });
  }

  async loadInstance(ctx: LoadContext): Promise<ModelInstance> {
    checkForceCpuOnly(ctx.config);
    const launch = await this.launch(ctx.config, ctx.modelDir);
    return PythonModelInstance.start({
      ctx,
      launch,
      modelFile: this.modelFile(ctx.config, ctx.versionDir),
      decoupled: ctx.config.model_transaction_policy?.decoupled === true,
    });
  }

  private modelFile(config: ModelConfig, versionDir: string): string {
    const file = path.join(versionDir, config.default_model_filename || this.defaultModelFilename);
    if (!existsSync(file)) {
      throw InferenceError.notFound(`unable to find '${file}' for model '${config.name ?? ''}'`);
    }
    return file;
  }

  private async launch(config: ModelConfig, modelDir: string): Promise<StubLaunch> {
    const runtime = await resolvePythonRuntime(config, modelDir, this.python);
    return { python: runtime.python, env: runtime.env, shmThreshold: this.shmThreshold };
  }
}

function checkForceCpuOnly(config: ModelConfig): void {
  const value = config.parameters?.FORCE_CPU_ONLY_INPUT_TENSORS?.string_value;
  if (value === undefined) return;
  if (!['yes', 'no'].includes(value.toLowerCase())) {
    throw InferenceError.unsupported(`Incorrect value for FORCE_CPU_ONLY_INPUT_TENSORS: ${value}`);
  }
}

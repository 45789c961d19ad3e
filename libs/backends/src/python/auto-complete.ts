import { InferenceError } from '@nereid/protocol';
import type { ModelConfig } from '@nereid/model-config';
import { MSG } from './frames';
import { StubProcess, describeExit, type LogFn, type StubLaunch } from './stub-process';

export interface AutoCompleteJob {
  modelFile: string;
  modelDir: string;
  versionDir: string;
  config: ModelConfig;
}

/**
 * Runs the model class's `auto_complete_config` in a stub and returns the config it produced (the
 * input config unchanged when the class has no such method). After a success the live stub goes to
 * `keep` (the model's first instance can take it over instead of starting python again); without
 * `keep`, or after a failure, it is finalized.
 */
export function runAutoComplete(
  launch: StubLaunch,
  log: LogFn,
  job: AutoCompleteJob,
  keep?: (proc: StubProcess) => void,
): Promise<ModelConfig> {
  const name = job.config.name ?? '';
  return new Promise<ModelConfig>((resolve, reject) => {
    let settled = false;
    const proc: StubProcess = new StubProcess(launch, log, (frame) => {
      const h = frame.header as Record<string, unknown>;
      if (frame.type === MSG.LOG) log(h.l as 'info', h.m as string);
      if (frame.type !== MSG.AUTOCOMPLETE_DONE) return;
      settled = true;
      if (typeof h.err === 'string') {
        proc.send(MSG.FINALIZE, {});
        reject(InferenceError.internal(`auto-complete of python model '${name}' failed: ${h.tb as string}`));
        return;
      }
      if (keep) keep(proc);
      else proc.send(MSG.FINALIZE, {});
      resolve(JSON.parse(h.config as string) as ModelConfig);
    });
    void proc.exited.then((exit) => {
      if (settled) return;
      const stderr = proc.stderrText();
      reject(InferenceError.internal(`auto-complete of python model '${name}' failed: the stub ${describeExit(exit)}${stderr ? `\n${stderr}` : ''}`));
    });
    proc.send(MSG.AUTOCOMPLETE, {
      file: job.modelFile, modelDir: job.modelDir, versionDir: job.versionDir, config: JSON.stringify(job.config),
    });
  });
}

import { ENSEMBLE_PLATFORM } from '../server-fill';
import type { EnsembleStep, ModelConfig } from '../types';
import { invalid } from './common';

function validateStep(step: EnsembleStep, index: number, model: string): void {
  const where = `in step ${index} of ensemble '${model}'`;
  if (!step.model_name) invalid(`must specify 'model_name' ${where}`);
  if (Object.keys(step.input_map ?? {}).length === 0) invalid(`must specify 'input_map' ${where}`);
  if (Object.keys(step.output_map ?? {}).length === 0) invalid(`must specify 'output_map' ${where}`);
}

/** Data-flow checks that need only the ensemble's own config (model-config.md §10). */
function validateGraph(config: ModelConfig, steps: EnsembleStep[], model: string): void {
  const inputs = new Set((config.input ?? []).map((i) => i.name ?? ''));
  const produced = new Set<string>();
  steps.forEach((step, i) => {
    for (const tensor of Object.values(step.output_map ?? {})) {
      if (produced.has(tensor) || inputs.has(tensor)) {
        invalid(`ensemble tensor '${tensor}' can appear in an output map only once for ensemble '${model}' in step ${i}`);
      }
      produced.add(tensor);
    }
  });
  const consumed = new Set<string>();
  steps.forEach((step, i) => {
    for (const tensor of Object.values(step.input_map ?? {})) {
      if (!inputs.has(tensor) && !produced.has(tensor)) {
        invalid(`ensemble tensor '${tensor}' used by step ${i} of ensemble '${model}' is neither an ensemble input nor an output of any step`);
      }
      consumed.add(tensor);
    }
  });
  for (const name of inputs) {
    if (!consumed.has(name)) invalid(`ensemble input '${name}' for ensemble ${model}' is not used`);
  }
  for (const output of config.output ?? []) {
    if (!produced.has(output.name ?? '')) invalid(`output '${output.name ?? ''}' for ensemble '${model}' is not written`);
  }
}

/** Ensemble checks of §7/§10/§14: scheduling present, steps complete, no instance groups or warmup. */
export function validateEnsemble(config: ModelConfig): void {
  const model = config.name ?? '';
  const isEnsemble = config.platform === ENSEMBLE_PLATFORM;
  const scheduling = config.ensemble_scheduling;
  if (!isEnsemble) {
    if (scheduling) invalid(`ensemble scheduling cannot be set for model '${model}' whose platform is not ensemble`);
    return;
  }
  if (!scheduling) invalid(`ensemble scheduling must be set for ensemble ${model} whose platform is ensemble`);
  const steps = scheduling.step ?? [];
  if (steps.length === 0) invalid(`must specify 'step' for ensemble '${model}'`);
  steps.forEach((step, i) => validateStep(step, i, model));
  if ((config.instance_group ?? []).length > 0) invalid(`instance group should not be specified for ensemble '${model}'`);
  if ((config.model_warmup ?? []).length > 0) invalid(`model_warmup can not be specified for ensemble '${model}'`);
  validateGraph(config, steps, model);
}

import { ENSEMBLE_PLATFORM } from '../server-fill';
import type { ModelConfig, ModelInstanceGroup } from '../types';
import { invalid } from './common';

function validateGroup(group: ModelInstanceGroup, model: string, gpuCount: number): void {
  const where = `instance group ${group.name ?? ''} of model ${model}`;
  const kind = group.kind ?? 'KIND_AUTO';
  const gpus = group.gpus ?? [];
  if ((kind === 'KIND_CPU' || kind === 'KIND_MODEL') && gpus.length > 0) {
    invalid(`${where} has kind ${kind} but specifies one or more GPUs`);
  }
  if ((group.count ?? 0) < 1) invalid(`${where} must specify 'count' >= 1`);
  // With no GPU at all, GPU placement is the backend's call; with GPUs, ids must exist.
  const bad = gpuCount > 0 ? gpus.find((id) => id < 0 || id >= gpuCount) : undefined;
  if (bad !== undefined) invalid(`${where} specifies invalid or unsupported gpu id ${bad}; available gpu ids are 0 to ${gpuCount - 1}`);
  for (const resource of group.rate_limiter?.resources ?? []) {
    if (!resource.name) invalid(`${where} has a rate limiter resource without 'name'`);
  }
}

/** Instance group checks (model-config.md §7); ensembles are checked in ensemble.ts. */
export function validateInstanceGroups(config: ModelConfig, gpuCount: number): void {
  if (config.platform === ENSEMBLE_PLATFORM) return;
  for (const group of config.instance_group ?? []) validateGroup(group, config.name ?? '', gpuCount);
}

import { ENSEMBLE_PLATFORM } from './server-fill';
import type { ModelConfig, ModelInstanceGroup } from './types';
import { cloneJson, isPlainObject } from './values';

export { fillServerSide, PLATFORM_BACKENDS, ENSEMBLE_PLATFORM, type ServerFillContext } from './server-fill';

export interface NormalizeOptions {
  /** Instance count of a KIND_CPU group without `count` for a backend (Triton: 2 for onnxruntime/tensorflow). */
  defaultCpuInstanceCount: (backend: string) => number;
  /** GPUs this server may use; 0 means CPU only. */
  gpuCount: number;
}

/** Default `max_sequence_idle_microseconds` (1 s) that replaces 0. */
export const DEFAULT_MAX_SEQUENCE_IDLE_US = 1000000;

function normalizeVersionPolicy(config: ModelConfig): void {
  const p = config.version_policy;
  if (!p || (p.latest === undefined && p.all === undefined && p.specific === undefined)) {
    config.version_policy = { latest: { num_versions: 1 } };
  }
}

function normalizeBatchers(config: ModelConfig): void {
  const mbs = config.max_batch_size ?? 0;
  const dynamic = config.dynamic_batching;
  if (dynamic && (dynamic.preferred_batch_size ?? []).length === 0 && mbs > 0) dynamic.preferred_batch_size = [mbs];
  const sequence = config.sequence_batching;
  if (!sequence) return;
  if (!sequence.max_sequence_idle_microseconds) sequence.max_sequence_idle_microseconds = DEFAULT_MAX_SEQUENCE_IDLE_US;
  const oldest = sequence.oldest;
  if (oldest && (oldest.preferred_batch_size ?? []).length === 0 && mbs > 0) oldest.preferred_batch_size = [mbs];
}

function normalizePinnedMemory(config: ModelConfig): void {
  const optimization = isPlainObject(config.optimization) ? config.optimization : {};
  if (optimization.input_pinned_memory === undefined) optimization.input_pinned_memory = { enable: true };
  if (optimization.output_pinned_memory === undefined) optimization.output_pinned_memory = { enable: true };
  config.optimization = optimization;
}

function resolveKind(group: ModelInstanceGroup, gpuCount: number): string {
  const kind = group.kind ?? 'KIND_AUTO';
  if (kind !== 'KIND_AUTO') return kind;
  const gpus = group.gpus ?? [];
  const gpusAvailable = gpuCount > 0 && gpus.every((id) => id >= 0 && id < gpuCount);
  if (gpusAvailable) return 'KIND_GPU';
  delete group.gpus;
  return 'KIND_CPU';
}

function normalizeGroup(group: ModelInstanceGroup, name: string, backend: string, opts: NormalizeOptions): void {
  if (!group.name) group.name = name;
  group.kind = resolveKind(group, opts.gpuCount);
  if (group.count === undefined || group.count < 1) {
    group.count = group.kind === 'KIND_CPU' ? opts.defaultCpuInstanceCount(backend) : 1;
  }
  if (group.kind === 'KIND_GPU' && (group.gpus ?? []).length === 0 && opts.gpuCount > 0) {
    group.gpus = Array.from({ length: opts.gpuCount }, (_v, i) => i);
  }
}

function normalizeInstanceGroups(config: ModelConfig, opts: NormalizeOptions): void {
  const model = config.name ?? '';
  const backend = config.backend ?? '';
  const groups = config.instance_group ?? [];
  if (groups.length === 0) {
    const group: ModelInstanceGroup = {};
    normalizeGroup(group, model, backend, opts);
    config.instance_group = [group];
    return;
  }
  groups.forEach((g, i) => normalizeGroup(g, `${model}_${i}`, backend, opts));
  config.instance_group = groups;
}

/**
 * Normalizations Triton applies to every config (model-config.md §4, §6, §7): version policy default,
 * preferred batch sizes, sequence idle default, pinned memory flags and instance groups. The input is not
 * mutated; a new object is returned.
 */
export function normalizeModelConfig(config: ModelConfig, opts: NormalizeOptions): ModelConfig {
  const out = cloneJson(config);
  normalizeVersionPolicy(out);
  normalizeBatchers(out);
  if (out.platform !== ENSEMBLE_PLATFORM) {
    normalizePinnedMemory(out);
    normalizeInstanceGroups(out, opts);
  }
  return out;
}

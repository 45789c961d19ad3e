import type { ModelVersionPolicy } from '@nereid/model-config';

/** Sub-directories of a model dir that are never versions. */
const RESERVED_DIRS = new Set(['warmup', 'initial_state', 'configs']);

/**
 * Version number of a sub-directory name, or undefined when it is not a version dir. Triton parses
 * the leading digits (stoll) and skips names with a leading 0 longer than one character.
 */
export function parseVersionDir(name: string): number | undefined {
  if (RESERVED_DIRS.has(name)) return undefined;
  const m = /^[0-9]+/.exec(name);
  if (!m) return undefined;
  if (name.length > 1 && name.startsWith('0')) return undefined;
  const v = Number(m[0]);
  return Number.isSafeInteger(v) ? v : undefined;
}

/** Versions to serve under a policy (input: versions present on disk). Sorted ascending. */
export function selectVersions(policy: ModelVersionPolicy | undefined, available: readonly number[]): {
  versions: number[];
  missing: number[];
} {
  const sorted = [...available].sort((a, b) => a - b);
  if (policy?.all) return { versions: sorted, missing: [] };
  if (policy?.specific) {
    const wanted = [...new Set(policy.specific.versions ?? [])].sort((a, b) => a - b);
    const present = new Set(sorted);
    return {
      versions: wanted.filter((v) => present.has(v)),
      missing: wanted.filter((v) => !present.has(v)),
    };
  }
  const n = Math.max(1, policy?.latest?.num_versions ?? 1);
  return { versions: sorted.slice(Math.max(0, sorted.length - n)), missing: [] };
}

import type { MemoryUsage } from '@nereid/backends';

// Kept out of @nereid/backends on purpose: a gateway-only process reaches this package through
// @nereid/worker and must not load the backends (onnxruntime, python) at run time.

/** One entry per memory type and device, the instances' sizes added up (Triton reports a model version's usage so). */
export function sumMemoryUsage(lists: readonly (readonly MemoryUsage[] | undefined)[]): MemoryUsage[] {
  const sums = new Map<string, MemoryUsage>();
  for (const list of lists) {
    for (const u of list ?? []) {
      const key = `${u.type}/${u.id}`;
      const sum = sums.get(key);
      if (sum) sum.byteSize += u.byteSize;
      else sums.set(key, { ...u });
    }
  }
  return [...sums.values()];
}

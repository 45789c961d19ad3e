import type { ExecuteBatchMessage } from '@nereid/transport';

/**
 * The fencing of batches on a worker (distributed mode): per model version, the highest lease
 * fence seen on a batch. A batch stamped with a lower fence comes from a scheduler that has lost
 * the version's lease (the new holder runs its requests): it is not run. Each such scheduler is
 * logged once per version.
 */
export class BatchFences {
  private readonly highest = new Map<string, number>();
  private readonly logged = new Set<string>();

  constructor(private readonly warn: (message: string) => void = () => undefined) {}

  /** Whether `m` may run; a batch without a fence (no lease: embedded use) always may. */
  admit(m: ExecuteBatchMessage): boolean {
    if (m.fence === undefined) return true;
    const highest = this.highest.get(m.key) ?? 0;
    if (m.fence >= highest) {
      this.highest.set(m.key, m.fence);
      return true;
    }
    const scheduler = m.batchId.slice(0, m.batchId.lastIndexOf(':'));
    const once = `${m.key} ${scheduler} ${m.fence}`;
    if (!this.logged.has(once)) {
      if (this.logged.size > 1000) this.logged.clear();
      this.logged.add(once);
      this.warn(`worker: ignoring batches of '${m.key}' from ${scheduler}: their lease fence ${m.fence} is older than ${highest} (that scheduler lost the lease)`);
    }
    return false;
  }
}

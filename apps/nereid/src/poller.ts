import type { ModelRepositoryManager } from '@nereid/core';
import type { LogLevel } from './logger';

/**
 * Poll mode: rescans the repositories on an interval and acts on the difference only. A model
 * whose folder's files (config.pbtxt, label files, any file of a version folder...) differ from
 * those of its last load attempt is loaded again; the manager then reloads only the versions whose
 * config or files changed, adds new ones and retires removed ones, and a reload that fails leaves
 * what served serving. A model whose load failed is tried again once its files change, not on
 * every poll. Models whose folder disappeared are unloaded.
 */
export function startPolling(
  manager: ModelRepositoryManager,
  intervalMs: number,
  log: (level: LogLevel, message: string) => void,
): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  /** Names found in two or more repositories, reported once. */
  let duplicatesReported = new Set<string>();
  const poll = async (): Promise<void> => {
    try {
      const { models, duplicates } = await manager.scan();
      for (const [name, location] of models) {
        if (!(await manager.changedSinceAttempt(location))) continue;
        await manager.load(name).catch((e: Error) => log('error', `poll: ${e.message}`));
      }
      for (const name of duplicates) {
        if (duplicatesReported.has(name)) continue;
        await manager.load(name).catch((e: Error) => log('error', `poll: ${e.message}`));
      }
      duplicatesReported = new Set(duplicates);
      for (const entry of manager.all()) {
        if (!models.has(entry.name) && !duplicates.has(entry.name)) {
          const serving = [...entry.versions.values()].some((v) => v.state === 'READY');
          if (serving) await manager.unload(entry.name);
        }
      }
    } catch (e) {
      log('error', `failed to poll from model repository: ${(e as Error).message}`);
    }
  };
  const tick = (): void => {
    if (running) return;
    running = poll().finally(() => {
      running = undefined;
    });
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    // Resolves once a poll under way has finished: nothing loads after the server closed.
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}

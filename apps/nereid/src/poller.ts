import type { ModelRepositoryManager } from '@nereid/core';
import type { LogLevel } from './logger';

/**
 * Poll mode: rescans the repositories on an interval, loads new or changed models (a load of an
 * unchanged model is a no-op) and unloads models whose directory disappeared.
 */
export function startPolling(
  manager: ModelRepositoryManager,
  intervalMs: number,
  log: (level: LogLevel, message: string) => void,
): { stop(): void } {
  let running = false;
  const tick = async (): Promise<void> => {
    if (running) return;
    running = true;
    try {
      const { models, duplicates } = await manager.scan();
      for (const name of [...models.keys(), ...duplicates]) {
        await manager.load(name).catch((e: Error) => log('error', `poll: ${e.message}`));
      }
      for (const entry of manager.all()) {
        if (!models.has(entry.name) && !duplicates.has(entry.name)) {
          const serving = [...entry.versions.values()].some((v) => v.state === 'READY');
          if (serving) await manager.unload(entry.name);
        }
      }
    } catch (e) {
      log('error', `poll failed: ${(e as Error).message}`);
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void tick(), intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

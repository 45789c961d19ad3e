import type Redis from 'ioredis';

/**
 * The sequences live on each model version (distributed mode), and the scheduler holding each:
 * written when a sequence starts, removed when it ends or idles out. A scheduler that takes a
 * version's lease over reads what the previous holder left: those sequences lost their state with
 * it, and their next request is told so (SequenceAffinity).
 */
export interface SequenceRegistry {
  /** `ids` (registryId) started on `model` under `owner`. */
  add(model: string, ids: string[], owner: string): Promise<void>;
  /** `ids` of `model` ended. */
  remove(model: string, ids: string[]): Promise<void>;
  /** Every sequence recorded for `model` (id → the scheduler that held it), removed from the registry. */
  takeOver(model: string): Promise<Map<string, string>>;
}

/** A correlation id as the registry stores it (UINT64 and STRING ids stay apart). */
export function registryId(id: bigint | string): string {
  return typeof id === 'bigint' ? `n${id}` : `s${id}`;
}

/** The registry in Redis: one hash per model version, `<prefix>sequences:<name>/<version>`. */
export class RedisSequenceRegistry implements SequenceRegistry {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'nereid:',
  ) {}

  private key(model: string): string {
    return `${this.prefix}sequences:${model}`;
  }

  async add(model: string, ids: string[], owner: string): Promise<void> {
    if (ids.length === 0) return;
    await this.redis.hset(this.key(model), ...ids.flatMap((id) => [id, owner]));
  }

  async remove(model: string, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.redis.hdel(this.key(model), ...ids);
  }

  async takeOver(model: string): Promise<Map<string, string>> {
    const [[err, all]] = (await this.redis.multi().hgetall(this.key(model)).del(this.key(model)).exec()) ?? [[null, {}]];
    if (err) throw err;
    return new Map(Object.entries((all ?? {}) as Record<string, string>));
  }
}

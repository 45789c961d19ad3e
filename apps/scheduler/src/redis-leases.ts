import type Redis from 'ioredis';
import type { LeaseStore } from './model-lease';

/**
 * Takes a free lease: a new fence, higher than every fence handed out for it before, and the
 * lease key `<owner>#<fence>` with its TTL. Fences are Redis's clock in microseconds (below 2^53
 * until the year 2255), or the last fence plus one when that is higher, or `floor` (ARGV[3]) when
 * given: they keep growing across a Redis restart that lost the counter (a worker that saw the
 * old fences would otherwise ignore every new batch). Milliseconds were too coarse: a holder that
 * renewed in the same millisecond as a flush got its old fence back, not a higher one.
 */
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
local floor = tonumber(ARGV[3] or '0') + 1
local f = string.format('%.0f', math.max(last + 1, now, floor))
redis.call('SET', KEYS[2], f)
redis.call('SET', KEYS[1], ARGV[1] .. '#' .. f, 'PX', ARGV[2])
return f`;

/** KEYS: lease, fence counter. ARGV: owner, ttl ms. */
const ACQUIRE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
${TAKE}`;

/**
 * KEYS: lease, fence counter. ARGV: owner, ttl ms, fence. Still the owner's: extended. Gone from
 * Redis (expired, or Redis restarted) and no fence handed out since the owner's: taken again with
 * a new fence. Anything else: lost (false).
 */
const RENEW = `
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] .. '#' .. ARGV[3] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return ARGV[3]
end
if v then return false end
if tonumber(redis.call('GET', KEYS[2]) or '0') > tonumber(ARGV[3]) then return false end
${TAKE}`;

/** KEYS: lease. ARGV: owner#fence. */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** Leases in Redis (`<prefix>lease:<name>` and its fence counter `<prefix>fence:<name>`). */
export class RedisLeaseStore implements LeaseStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'nereid:',
  ) {}

  private keys(lease: string): [string, string] {
    return [`${this.prefix}lease:${lease}`, `${this.prefix}fence:${lease}`];
  }

  async acquire(lease: string, owner: string, ttlMs: number): Promise<number | undefined> {
    const fence = (await this.redis.eval(ACQUIRE, 2, ...this.keys(lease), owner, ttlMs)) as string | null;
    return fence === null ? undefined : Number(fence);
  }

  async renew(lease: string, owner: string, fence: number, ttlMs: number): Promise<number | undefined> {
    const next = (await this.redis.eval(RENEW, 2, ...this.keys(lease), owner, ttlMs, String(fence))) as string | null;
    return next === null ? undefined : Number(next);
  }

  async release(lease: string, owner: string, fence: number): Promise<void> {
    await this.redis.eval(RELEASE, 1, this.keys(lease)[0], `${owner}#${fence}`);
  }
}

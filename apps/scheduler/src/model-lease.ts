/**
 * Leases with fencing (distributed mode): a model version's request queue is consumed by one
 * scheduler at a time, the holder of the version's lease. Each acquisition hands out a fence, a
 * number higher than every fence handed out before for the same lease; the holder stamps it on
 * every batch it dispatches, and a worker ignores a batch whose fence is lower than one it has
 * seen for the model (a scheduler that lost its lease without knowing it yet).
 */
export interface LeaseStore {
  /** Takes `lease` for `owner` for `ttlMs` when no one holds it: its new fence, or undefined when held by another. */
  acquire(lease: string, owner: string, ttlMs: number): Promise<number | undefined>;
  /**
   * Extends `owner`'s hold (taken with `fence`) by `ttlMs`: the fence to use from now on (the same
   * one, or a new one when the store had lost the lease, e.g. a restarted Redis, and no one took
   * it since), or undefined when the lease is no longer `owner`'s.
   */
  renew(lease: string, owner: string, fence: number, ttlMs: number): Promise<number | undefined>;
  /** Gives the lease up (only when it is still `owner`'s with `fence`). */
  release(lease: string, owner: string, fence: number): Promise<void>;
}

/** How long a lease lasts without renewal: a dead holder's models are taken over after this. */
export const LEASE_TTL_MS = 3000;
/** How often a holder renews its leases, and others try to take a free one. */
export const LEASE_TICK_MS = 750;
/**
 * A holder that has not renewed for this share of the TTL (Redis slow or gone) stops using the
 * lease by itself, before it can expire in Redis and be taken by another scheduler.
 */
const SAFE_SHARE = 0.8;

export interface LeaseEvents {
  /** The lease is now held, with `fence`. */
  acquired(fence: number): void;
  /** The lease is no longer held (taken by another, or not renewed in time): stop at once. */
  lost(reason: string): void;
  /** The store handed out a new fence while the lease stayed held (it had lost the lease). */
  fenced?(fence: number): void;
}

/**
 * One lease as its would-be holder sees it: tries to acquire it every tick while it is free,
 * renews it every tick while held, and reports when it is gained and lost. `held` is checked
 * against the local clock too, so a holder that cannot reach the store stops in time by itself.
 */
export class Lease {
  private fence?: number;
  /** performance.now() after which the hold is not trusted any more. */
  private validUntil = 0;
  private timer?: NodeJS.Timeout;
  private busy = false;
  private stopped = false;

  constructor(
    private readonly store: LeaseStore,
    readonly name: string,
    readonly owner: string,
    private readonly events: LeaseEvents,
    private readonly ttlMs = LEASE_TTL_MS,
    private readonly tickMs = LEASE_TICK_MS,
  ) {}

  /** The fence while the lease is held and trusted; undefined otherwise. */
  get heldFence(): number | undefined {
    return this.fence !== undefined && performance.now() < this.validUntil ? this.fence : undefined;
  }

  /** Starts trying (the first try at once). */
  start(): Promise<void> {
    this.timer ??= setInterval(() => void this.tick(), this.tickMs);
    return this.tick();
  }

  /** One acquire-or-renew round (also run by the timer). */
  async tick(): Promise<void> {
    if (this.busy || this.stopped) return;
    this.busy = true;
    const sentAt = performance.now();
    try {
      if (this.fence === undefined) {
        const fence = await this.store.acquire(this.name, this.owner, this.ttlMs);
        if (fence !== undefined && !this.stopped) {
          this.fence = fence;
          this.validUntil = sentAt + this.ttlMs * SAFE_SHARE;
          this.events.acquired(fence);
        }
      } else if (performance.now() >= this.validUntil) {
        this.drop(`not renewed within ${Math.round(this.ttlMs * SAFE_SHARE)} ms`);
      } else {
        const fence = await this.store.renew(this.name, this.owner, this.fence, this.ttlMs);
        if (this.stopped || this.fence === undefined) return;
        if (fence === undefined) {
          this.drop('held by another scheduler');
        } else {
          if (fence !== this.fence) {
            this.fence = fence;
            this.events.fenced?.(fence);
          }
          this.validUntil = sentAt + this.ttlMs * SAFE_SHARE;
        }
      }
    } catch (e) {
      // The store is unreachable: the hold lapses by the clock (next tick), nothing else.
      if (this.fence !== undefined && performance.now() >= this.validUntil) this.drop(`lease store: ${(e as Error).message}`);
    } finally {
      this.busy = false;
    }
  }

  private drop(reason: string): void {
    this.fence = undefined;
    this.validUntil = 0;
    this.events.lost(reason);
  }

  /** Gives the lease up when held, and goes on trying to take it (e.g. after a failed start as its holder). */
  async abandon(): Promise<void> {
    const fence = this.fence;
    this.fence = undefined;
    this.validUntil = 0;
    if (fence !== undefined) await this.store.release(this.name, this.owner, fence).catch(() => undefined);
  }

  /** Stops trying and gives the lease up when held (another scheduler takes it at once). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    const fence = this.fence;
    this.fence = undefined;
    if (fence !== undefined) await this.store.release(this.name, this.owner, fence).catch(() => undefined);
  }
}

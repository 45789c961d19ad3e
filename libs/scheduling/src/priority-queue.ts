import type { ModelDynamicBatching, ModelQueuePolicy } from '@nereid/model-config';
import { isCancelled, type ExecutionItem } from '@nereid/protocol';
import { Deque } from './deque';

/** A queued request with the times the scheduler needs. */
export interface QueuedItem {
  item: ExecutionItem;
  /** Clock time the scheduler accepted it (ms). */
  enqueuedAt: number;
  /** Clock time its queue timeout expires (ms); undefined = no timeout. */
  deadline?: number;
  /** Index of its priority level (0 = highest). */
  level: number;
}

interface LevelPolicy {
  maxQueueSize: number;
  defaultTimeoutUs: number;
  allowOverride: boolean;
  delayOnTimeout: boolean;
}

interface Level {
  policy: LevelPolicy;
  queue: Deque<QueuedItem>;
  /** Requests whose timeout expired under a DELAY policy: served after the level's other requests. */
  delayed: Deque<QueuedItem>;
}

function toPolicy(p: ModelQueuePolicy | undefined): LevelPolicy {
  const action = p?.timeout_action as unknown;
  return {
    maxQueueSize: Number(p?.max_queue_size ?? 0),
    defaultTimeoutUs: Number(p?.default_timeout_microseconds ?? 0),
    allowOverride: p?.allow_timeout_override === true,
    delayOnTimeout: action === 'DELAY' || action === 1,
  };
}

/**
 * The dynamic batcher's queue: one FIFO per priority level (a single one when `priority_levels` is
 * 0), each with its queue policy (size limit, timeout, REJECT or DELAY). Iteration order is the
 * service order: level 1 first; within a level, FIFO, then that level's delayed requests.
 */
export class PriorityQueue {
  private readonly levels: Level[];
  private readonly defaultLevel: number;
  /** `priority_levels` > 0 (even 1): Triton then never prefetches. */
  private readonly prioritized: boolean;
  private total = 0;
  /** A lower bound of the earliest deadline in the queue (may be stale-low after removals). */
  private earliestDeadline = Infinity;

  constructor(config: ModelDynamicBatching) {
    const count = Math.max(0, Math.floor(Number(config.priority_levels ?? 0)));
    const policies = config.priority_queue_policy ?? {};
    this.levels = [];
    for (let p = 1; p <= Math.max(1, count); p++) {
      const policy = toPolicy(count > 0 ? (policies[String(p)] ?? config.default_queue_policy) : config.default_queue_policy);
      this.levels.push({ policy, queue: new Deque(), delayed: new Deque() });
    }
    this.prioritized = count > 0;
    const dflt = Number(config.default_priority_level ?? 0);
    this.defaultLevel = count > 0 && dflt >= 1 && dflt <= count ? dflt - 1 : this.levels.length - 1;
  }

  get size(): number {
    return this.total;
  }

  /**
   * Whether requests may leave this queue before an instance is free to run them (Triton's
   * `SupportPrefetching`): only with a single level whose policy has no timeout, no timeout
   * override and no size limit. Otherwise a request handed over early would escape the policy.
   */
  get allowsPrefetch(): boolean {
    if (this.levels.length !== 1 || this.prioritized) return false;
    const p = this.levels[0].policy;
    return p.defaultTimeoutUs === 0 && !p.allowOverride && p.maxQueueSize === 0;
  }

  /** Level index for a request priority: 0 or beyond the configured levels → the default level. */
  levelOf(priority: number): number {
    if (this.levels.length === 1) return 0;
    return priority >= 1 && priority <= this.levels.length ? priority - 1 : this.defaultLevel;
  }

  /** Adds a request; undefined when its level is at `max_queue_size`. */
  push(item: ExecutionItem, now: number): QueuedItem | undefined {
    const level = this.levelOf(item.request.priority);
    const { policy, queue, delayed } = this.levels[level];
    if (policy.maxQueueSize > 0 && queue.size + delayed.size >= policy.maxQueueSize) return undefined;
    const timeoutUs = effectiveTimeoutUs(policy, item.request.timeoutUs);
    const deadline = timeoutUs > 0 ? now + timeoutUs / 1000 : undefined;
    if (deadline !== undefined) this.earliestDeadline = Math.min(this.earliestDeadline, deadline);
    const queued: QueuedItem = { item, enqueuedAt: now, deadline, level };
    queue.push(queued);
    this.total++;
    return queued;
  }

  /** Queued requests in service order. */
  *inOrder(): IterableIterator<QueuedItem> {
    for (const level of this.levels) {
      yield* level.queue;
      yield* level.delayed;
    }
  }

  /** Removes the first `n` requests in service order. */
  shiftN(n: number): QueuedItem[] {
    const out: QueuedItem[] = [];
    for (const level of this.levels) {
      for (const q of [level.queue, level.delayed]) {
        while (out.length < n && q.size > 0) out.push(q.shift() as QueuedItem);
      }
    }
    this.total -= out.length;
    return out;
  }

  /** Removes and returns the requests whose client has gone away. */
  removeCancelled(): QueuedItem[] {
    let removed: QueuedItem[] | undefined;
    for (const level of this.levels) {
      // Scanned first: nearly always nothing is cancelled, and removing rebuilds the queue.
      if (anyCancelled(level.queue)) (removed ??= []).push(...level.queue.removeIf(cancelledItem));
      if (anyCancelled(level.delayed)) (removed ??= []).push(...level.delayed.removeIf(cancelledItem));
    }
    if (removed === undefined) return [];
    this.total -= removed.length;
    return removed;
  }

  /** When the next timeout may expire (Infinity when none). */
  get nextDeadline(): number {
    return this.earliestDeadline;
  }

  /**
   * Handles requests whose timeout has passed at `now`: DELAY-policy ones move behind their level's
   * other requests and lose their timeout; REJECT-policy ones are removed and returned.
   */
  expire(now: number): QueuedItem[] {
    if (now < this.earliestDeadline) return [];
    const rejected: QueuedItem[] = [];
    const expired = (q: QueuedItem) => q.deadline !== undefined && q.deadline <= now;
    for (const level of this.levels) {
      const gone = level.queue.removeIf(expired);
      for (const q of gone) {
        q.deadline = undefined;
        if (level.policy.delayOnTimeout) level.delayed.push(q);
        else rejected.push(q);
      }
    }
    this.total -= rejected.length;
    this.earliestDeadline = this.computeEarliestDeadline();
    return rejected;
  }

  private computeEarliestDeadline(): number {
    let min = Infinity;
    for (const level of this.levels) {
      for (const q of level.queue) if (q.deadline !== undefined && q.deadline < min) min = q.deadline;
    }
    return min;
  }
}

function cancelledItem(q: QueuedItem): boolean {
  return isCancelled(q.item.request);
}

function anyCancelled(queue: Deque<QueuedItem>): boolean {
  for (const q of queue) if (isCancelled(q.item.request)) return true;
  return false;
}

/** The queue timeout of a request: the policy default, shortened by the request's own when allowed. */
export function effectiveTimeoutUs(policy: Pick<LevelPolicy, 'defaultTimeoutUs' | 'allowOverride'>, requestUs: number): number {
  // Triton's rule: the request timeout is taken only when it is non-zero and below the default
  // (so with no default timeout a request cannot introduce one).
  if (policy.allowOverride && requestUs > 0 && requestUs < policy.defaultTimeoutUs) return requestUs;
  return policy.defaultTimeoutUs;
}

import type { ModelConfig, ModelDynamicBatching } from '@nereid/model-config';
import { FakeClock } from './clock';
import { createScheduler } from './scheduler';
import { FakeExecutor, SinkLog, settle } from './spec-helpers';

/** A dynamic batcher over instances that each accept `depth` batches at once. */
function setup(db: ModelDynamicBatching, opts: { max?: number; instances?: number; depth?: number } = {}) {
  const clock = new FakeClock(1000);
  const ex = new FakeExecutor();
  const log = new SinkLog();
  const config: ModelConfig = { max_batch_size: opts.max ?? 4, dynamic_batching: db };
  const s = createScheduler(config, { instanceCount: opts.instances ?? 1, depth: opts.depth, execute: ex.execute, clock });
  return { clock, ex, log, s };
}

describe('DynamicBatchScheduler and cancelled requests', () => {
  it('drops requests whose client went away while queued: CANCELLED, never batched', async () => {
    const { ex, log, s } = setup({}, { max: 4 });
    const left = new AbortController();
    s.enqueue(log.item({ id: 'running' }));
    s.enqueue(log.item({ id: 'a' }));
    s.enqueue(log.item({ id: 'gone', signal: left.signal }));
    s.enqueue(log.item({ id: 'b' }));
    left.abort();
    ex.finish(0);
    await settle();
    expect(ex.ids()).toEqual([['running'], ['a', 'b']]);
    expect(log.errors()).toEqual([
      { id: 'gone', code: 'CANCELLED', message: '[request id: gone] Request was cancelled before it ran' },
    ]);
    expect(s.pendingCount).toBe(0);
  });

  it('drops cancelled requests of every priority level and of the delayed queue', async () => {
    const db: ModelDynamicBatching = {
      priority_levels: 2,
      default_priority_level: 2,
      priority_queue_policy: { '2': { timeout_action: 'DELAY', default_timeout_microseconds: 1000 } },
    };
    const { clock, ex, log, s } = setup(db, { max: 1 });
    const controllers = [new AbortController(), new AbortController()];
    s.enqueue(log.item({ id: 'running' }));
    s.enqueue(log.item({ id: 'delayed', priority: 2, signal: controllers[0].signal }));
    s.enqueue(log.item({ id: 'high', priority: 1, signal: controllers[1].signal }));
    s.enqueue(log.item({ id: 'kept', priority: 1 }));
    clock.advance(2);
    for (const c of controllers) c.abort();
    ex.finish(0);
    await settle();
    expect(ex.ids()).toEqual([['running'], ['kept']]);
    expect(log.errors().map((e) => [e.id, e.code])).toEqual([['high', 'CANCELLED'], ['delayed', 'CANCELLED']]);
  });

  it('a cancelled request in a batch that is still forming is not sent when the delay ends', () => {
    const { clock, ex, log, s } = setup({ max_queue_delay_microseconds: 10_000 }, { max: 4 });
    const left = new AbortController();
    s.enqueue(log.item({ id: 'a', signal: left.signal }));
    s.enqueue(log.item({ id: 'b' }));
    left.abort();
    clock.advance(10);
    expect(ex.ids()).toEqual([['b']]);
    expect(log.errors().map((e) => e.id)).toEqual(['a']);
  });
});

describe('DynamicBatchScheduler prefetch (instances of depth > 1)', () => {
  it('hands a busy instance a second batch when the queue has no policy', () => {
    const { ex, log, s } = setup({}, { max: 1, depth: 2 });
    for (const id of ['a', 'b', 'c']) s.enqueue(log.item({ id }));
    expect(ex.ids()).toEqual([['a'], ['b']]);
    expect(s.pendingCount).toBe(1);
  });

  it.each<[string, ModelDynamicBatching]>([
    ['a default timeout', { default_queue_policy: { default_timeout_microseconds: 50_000 } }],
    ['allow_timeout_override', { default_queue_policy: { allow_timeout_override: true } }],
    ['max_queue_size', { default_queue_policy: { max_queue_size: 8 } }],
    ['priority levels', { priority_levels: 1 }],
  ])('keeps requests queued until an instance is idle with %s (Triton does not prefetch then)', async (_what, db) => {
    const { ex, log, s } = setup(db, { max: 1, depth: 2 });
    for (const id of ['a', 'b']) s.enqueue(log.item({ id }));
    expect(ex.ids()).toEqual([['a']]);
    expect(s.pendingCount).toBe(1);
    ex.finish(0);
    await settle();
    expect(ex.ids()).toEqual([['a'], ['b']]);
  });

  it("honours a request's own shorter timeout on an instance that could take a second batch", () => {
    const policy = { default_timeout_microseconds: 1_000_000, allow_timeout_override: true };
    const { clock, ex, log, s } = setup({ default_queue_policy: policy }, { max: 1, depth: 2 });
    s.enqueue(log.item({ id: 'busy' }));
    s.enqueue(log.item({ id: 'short', timeoutUs: 100_000 }));
    s.enqueue(log.item({ id: 'default' }));
    clock.advance(100);
    expect(log.errors()).toEqual([{ id: 'short', code: 'UNAVAILABLE', message: 'Request timeout expired' }]);
    expect(ex.ids()).toEqual([['busy']]);
    clock.advance(900);
    expect(log.errors().map((e) => e.id)).toEqual(['short', 'default']);
  });
});

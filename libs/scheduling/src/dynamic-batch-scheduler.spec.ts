import type { ModelConfig, ModelDynamicBatching } from '@nereid/model-config';
import { FakeClock } from './clock';
import { DynamicBatchScheduler } from './dynamic-batch-scheduler';
import { createScheduler } from './scheduler';
import { FakeExecutor, SinkLog, responseFor, settle } from './spec-helpers';

function setup(db: ModelDynamicBatching, opts: { max?: number; instances?: number; config?: Partial<ModelConfig> } = {}) {
  const clock = new FakeClock(1000);
  const ex = new FakeExecutor();
  const log = new SinkLog();
  const config: ModelConfig = { max_batch_size: opts.max ?? 4, dynamic_batching: db, ...opts.config };
  const s = createScheduler(config, { instanceCount: opts.instances ?? 1, execute: ex.execute, clock });
  return { clock, ex, log, s };
}

describe('DynamicBatchScheduler batch formation', () => {
  it('is chosen when dynamic_batching is set', () => {
    expect(setup({}).s).toBeInstanceOf(DynamicBatchScheduler);
  });

  it('sends a batch at once when max_batch_size is reached', () => {
    const { ex, log, s } = setup({ max_queue_delay_microseconds: 100_000 }, { instances: 2 });
    s.enqueue(log.item({ id: 'a', inputs: { IN: [1, 4] } }));
    s.enqueue(log.item({ id: 'b', inputs: { IN: [2, 4] } }));
    expect(ex.batches).toHaveLength(0);
    s.enqueue(log.item({ id: 'c', inputs: { IN: [1, 4] } }));
    expect(ex.ids()).toEqual([['a', 'b', 'c']]);
    expect(s.pendingCount).toBe(0);
    expect(s.inflightCount).toBe(3);
  });

  it('never exceeds max_batch_size and keeps FIFO order', () => {
    const { ex, log, s } = setup({ max_queue_delay_microseconds: 100_000 }, { instances: 2 });
    s.enqueue(log.item({ id: 'a', inputs: { IN: [3, 4] } }));
    s.enqueue(log.item({ id: 'b', inputs: { IN: [2, 4] } }));
    // a (3) + b (2) > 4: a cannot grow with b, so it goes alone; b waits for its delay.
    expect(ex.ids()).toEqual([['a']]);
    expect(s.pendingCount).toBe(1);
  });

  it('without a delay sends whatever is queued as soon as an instance is free', async () => {
    const { ex, log, s } = setup({});
    s.enqueue(log.item({ id: 'a' }));
    expect(ex.ids()).toEqual([['a']]);
    for (const id of ['b', 'c', 'd', 'e', 'f']) s.enqueue(log.item({ id }));
    expect(ex.batches).toHaveLength(1);
    ex.finish(0);
    await settle();
    expect(ex.ids()).toEqual([['a'], ['b', 'c', 'd', 'e']]);
    ex.finish(1);
    await settle();
    expect(ex.ids()[2]).toEqual(['f']);
  });

  it('waits up to max_queue_delay for a fuller batch', () => {
    const { clock, ex, log, s } = setup({ max_queue_delay_microseconds: 10_000 });
    s.enqueue(log.item({ id: 'a' }));
    clock.advance(4);
    s.enqueue(log.item({ id: 'b' }));
    clock.advance(5.9);
    expect(ex.batches).toHaveLength(0);
    clock.advance(0.1); // 10 ms after the oldest request
    expect(ex.ids()).toEqual([['a', 'b']]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('sends the largest reachable preferred batch size without waiting', async () => {
    const { clock, ex, log, s } = setup({ preferred_batch_size: [2, 3], max_queue_delay_microseconds: 50_000 }, { max: 8 });
    s.enqueue(log.item({ id: 'a' }));
    expect(ex.batches).toHaveLength(0);
    s.enqueue(log.item({ id: 'b' }));
    expect(ex.ids()).toEqual([['a', 'b']]);
    for (const id of ['c', 'd', 'e', 'f']) s.enqueue(log.item({ id }));
    ex.finish(0);
    await settle();
    // 4 queued: sizes 1..4 reachable, largest preferred is 3.
    expect(ex.ids()[1]).toEqual(['c', 'd', 'e']);
    ex.finish(1);
    await settle();
    expect(ex.batches).toHaveLength(2);
    clock.advance(50);
    expect(ex.ids()[2]).toEqual(['f']);
  });

  it('does not batch requests with different non-batch shapes or inputs', () => {
    const { clock, ex, log, s } = setup({ max_queue_delay_microseconds: 1000 }, { max: 8, instances: 3 });
    s.enqueue(log.item({ id: 'a', inputs: { IN: [1, 4] } }));
    s.enqueue(log.item({ id: 'b', inputs: { IN: [1, 4] } }));
    s.enqueue(log.item({ id: 'c', inputs: { IN: [1, 5] } }));
    // The head batch [a, b] cannot grow past c: it is sent at once.
    expect(ex.ids()).toEqual([['a', 'b']]);
    s.enqueue(log.item({ id: 'd', inputs: { IN: [1, 5], EXTRA: [1, 1] } }));
    expect(ex.ids()).toEqual([['a', 'b'], ['c']]);
    clock.advance(1);
    expect(ex.ids()).toEqual([['a', 'b'], ['c'], ['d']]);
  });

  it('batches different shapes of an input that allows ragged batches', () => {
    const config = { input: [{ name: 'IN', allow_ragged_batch: true }] };
    const { ex, log, s } = setup({}, { max: 8, config });
    s.enqueue(log.item({ id: 'x' }));
    s.enqueue(log.item({ id: 'a', inputs: { IN: [1, 4] } }));
    s.enqueue(log.item({ id: 'b', inputs: { IN: [1, 7] } }));
    ex.finish(0);
    return settle().then(() => expect(ex.ids()[1]).toEqual(['a', 'b']));
  });

  it('runs each request alone when max_batch_size is 0', () => {
    const { ex, log, s } = setup({ max_queue_delay_microseconds: 1000 }, { max: 0, instances: 3 });
    s.enqueue(log.item({ id: 'a', inputs: { IN: [4] } }));
    s.enqueue(log.item({ id: 'b', inputs: { IN: [4] } }));
    expect(ex.ids()).toEqual([['a'], ['b']]);
  });

  it('uses up to instanceCount instances concurrently', async () => {
    const { ex, log, s } = setup({}, { max: 2, instances: 3 });
    for (let i = 0; i < 10; i++) s.enqueue(log.item({ id: `r${i}` }));
    expect(ex.ids()).toEqual([['r0'], ['r1'], ['r2']]);
    expect(ex.batches.map((b) => b.instance)).toEqual([0, 1, 2]);
    expect(s.inflightCount).toBe(3);
    expect(s.pendingCount).toBe(7);
    ex.finish(1);
    await settle();
    expect(ex.ids()[3]).toEqual(['r3', 'r4']);
    expect(ex.batches[3].instance).toBe(1);
    expect(s.inflightCount).toBe(4);
  });
});

describe('DynamicBatchScheduler priorities and queue policies', () => {
  it('serves higher priority levels first; 0 and out-of-range priorities use the default level', async () => {
    const { ex, log, s } = setup({ priority_levels: 3, default_priority_level: 2 }, { max: 1 });
    s.enqueue(log.item({ id: 'busy' }));
    s.enqueue(log.item({ id: 'p3', priority: 3 }));
    s.enqueue(log.item({ id: 'p0', priority: 0 }));
    s.enqueue(log.item({ id: 'p9', priority: 9 }));
    s.enqueue(log.item({ id: 'p1', priority: 1 }));
    s.enqueue(log.item({ id: 'p2', priority: 2 }));
    for (let i = 0; i < 5; i++) {
      ex.finish(i);
      await settle();
    }
    expect(ex.ids().flat()).toEqual(['busy', 'p1', 'p0', 'p9', 'p2', 'p3']);
  });

  it('rejects requests beyond max_queue_size with UNAVAILABLE', () => {
    const { ex, log, s } = setup({ default_queue_policy: { max_queue_size: 2 } }, { max: 1 });
    for (const id of ['a', 'b', 'c', 'd']) s.enqueue(log.item({ id }));
    expect(ex.ids()).toEqual([['a']]);
    expect(s.pendingCount).toBe(2);
    expect(log.errors()).toEqual([{ id: 'd', code: 'UNAVAILABLE', message: '[request id: d] Exceeds maximum queue size' }]);
    const anon = log.item({ id: '' });
    s.enqueue(anon);
    expect(log.errors()[1].message).toBe('[request id: <id_unknown>] Exceeds maximum queue size');
  });

  it('applies max_queue_size per priority level', () => {
    const db: ModelDynamicBatching = {
      priority_levels: 2,
      default_priority_level: 2,
      priority_queue_policy: { '1': { max_queue_size: 1 } },
    };
    const { log, s } = setup(db, { max: 1 });
    s.enqueue(log.item({ id: 'busy' }));
    s.enqueue(log.item({ id: 'h1', priority: 1 }));
    s.enqueue(log.item({ id: 'h2', priority: 1 }));
    s.enqueue(log.item({ id: 'l1', priority: 2 }));
    s.enqueue(log.item({ id: 'l2', priority: 2 }));
    expect(log.errors().map((e) => e.id)).toEqual(['h2']);
  });

  it('rejects requests whose queue timeout expires (REJECT)', () => {
    const { clock, ex, log, s } = setup({ default_queue_policy: { default_timeout_microseconds: 5000 } }, { max: 1 });
    s.enqueue(log.item({ id: 'busy' }));
    s.enqueue(log.item({ id: 'a' }));
    clock.advance(2);
    s.enqueue(log.item({ id: 'b' }));
    clock.advance(2.9);
    expect(log.errors()).toEqual([]);
    clock.advance(0.1);
    expect(log.errors()).toEqual([{ id: 'a', code: 'UNAVAILABLE', message: 'Request timeout expired' }]);
    clock.advance(2);
    expect(log.errors().map((e) => e.id)).toEqual(['a', 'b']);
    expect(s.pendingCount).toBe(0);
    expect(ex.batches).toHaveLength(1);
  });

  it('lets a request shorten the timeout only when allow_timeout_override is set', () => {
    const policy = { default_timeout_microseconds: 10_000, allow_timeout_override: true };
    const { clock, log, s } = setup({ default_queue_policy: policy }, { max: 1 });
    s.enqueue(log.item({ id: 'busy' }));
    s.enqueue(log.item({ id: 'short', timeoutUs: 2000 }));
    s.enqueue(log.item({ id: 'long', timeoutUs: 50_000 }));
    s.enqueue(log.item({ id: 'none' }));
    clock.advance(2);
    expect(log.errors().map((e) => e.id)).toEqual(['short']);
    clock.advance(8);
    expect(log.errors().map((e) => e.id)).toEqual(['short', 'long', 'none']);
  });

  it('ignores the request timeout without allow_timeout_override', () => {
    const { clock, log, s } = setup({ default_queue_policy: { default_timeout_microseconds: 10_000 } }, { max: 1 });
    s.enqueue(log.item({ id: 'busy' }));
    s.enqueue(log.item({ id: 'short', timeoutUs: 2000 }));
    clock.advance(5);
    expect(log.errors()).toEqual([]);
    clock.advance(5);
    expect(log.errors().map((e) => e.id)).toEqual(['short']);
  });

  it('moves expired requests behind the others of their level (DELAY) and still runs them', async () => {
    const db: ModelDynamicBatching = {
      priority_levels: 2,
      default_priority_level: 1,
      priority_queue_policy: { '1': { timeout_action: 'DELAY', default_timeout_microseconds: 1000 } },
    };
    const { clock, ex, log, s } = setup(db, { max: 1 });
    s.enqueue(log.item({ id: 'busy' }));
    s.enqueue(log.item({ id: 'old', priority: 1 }));
    clock.advance(2);
    s.enqueue(log.item({ id: 'new', priority: 1 }));
    s.enqueue(log.item({ id: 'low', priority: 2 }));
    for (let i = 0; i < 3; i++) {
      ex.finish(i);
      await settle();
    }
    ex.finish(3);
    await settle();
    expect(log.errors()).toEqual([]);
    // 'new' expires only later; at dispatch time 'old' is delayed, so: new, old, then level 2.
    expect(ex.ids().flat()).toEqual(['busy', 'new', 'old', 'low']);
  });
});

describe('DynamicBatchScheduler preserve_ordering and failures', () => {
  it('delivers responses in arrival order across instances', async () => {
    const { ex, log, s } = setup({ preserve_ordering: true }, { max: 1, instances: 3 });
    for (const id of ['a', 'b', 'c']) s.enqueue(log.item({ id }));
    ex.finish(2);
    ex.finish(1);
    await settle();
    expect(log.events).toEqual([]);
    ex.finish(0);
    await settle();
    expect(log.finals()).toEqual(['a', 'b', 'c']);
  });

  it('streams the oldest request and buffers later ones, failures included', async () => {
    const { ex, log, s } = setup({ preserve_ordering: true }, { max: 1, instances: 2 });
    s.enqueue(log.item({ id: 'a' }));
    s.enqueue(log.item({ id: 'b' }));
    const [a, b] = [ex.batches[0].items[0], ex.batches[1].items[0]];
    b.sink.send(responseFor(b.request), false);
    ex.batches[1].done.reject(new Error('instance died'));
    await settle();
    a.sink.send(responseFor(a.request), false);
    expect(log.events.map((e) => e.id)).toEqual(['a']);
    a.sink.send(undefined, true);
    expect(log.events.map((e) => [e.id, 'error' in e ? 'error' : e.final])).toEqual([
      ['a', false], ['a', true], ['b', false], ['b', 'error'],
    ]);
  });

  it('fails only the unanswered requests of a rejected execute, then keeps serving', async () => {
    const { ex, log, s } = setup({}, { max: 4 });
    s.enqueue(log.item({ id: 'x' }));
    for (const id of ['a', 'b', 'c']) s.enqueue(log.item({ id }));
    ex.finish(0);
    await settle();
    const batch = ex.batches[1];
    batch.items[1].sink.send(responseFor(batch.items[1].request), true);
    batch.done.reject(new Error('onnxruntime failed'));
    await settle();
    expect(log.errors()).toEqual([
      { id: 'a', code: 'INTERNAL', message: 'onnxruntime failed' },
      { id: 'c', code: 'INTERNAL', message: 'onnxruntime failed' },
    ]);
    // A late call on a failed request is dropped.
    batch.items[0].sink.send(responseFor(batch.items[0].request), true);
    expect(log.finals()).toEqual(['x', 'b']);
    s.enqueue(log.item({ id: 'd' }));
    expect(ex.ids()[2]).toEqual(['d']);
    expect(s.inflightCount).toBe(1);
  });
});

describe('DynamicBatchScheduler stop', () => {
  it('flushes waiting batches without the delay, drains, then rejects new work', async () => {
    const { clock, ex, log, s } = setup({ max_queue_delay_microseconds: 1_000_000 }, { max: 4 });
    s.enqueue(log.item({ id: 'a' }));
    s.enqueue(log.item({ id: 'b' }));
    expect(ex.batches).toHaveLength(0);
    let stopped = false;
    const stopping = s.stop().then(() => (stopped = true));
    expect(ex.ids()).toEqual([['a', 'b']]);
    s.enqueue(log.item({ id: 'late' }));
    expect(log.errors()).toEqual([{
      id: 'late',
      code: 'UNAVAILABLE',
      message: "[request id: late] Server is stopping: model 'm' is not accepting new requests",
    }]);
    await settle();
    expect(stopped).toBe(false);
    ex.finish(0);
    await stopping;
    expect(log.finals()).toEqual(['a', 'b']);
    expect(clock.pendingTimers).toBe(0);
  });

  it('waits for queued requests behind busy instances', async () => {
    const { ex, log, s } = setup({}, { max: 1 });
    for (const id of ['a', 'b']) s.enqueue(log.item({ id }));
    let stopped = false;
    const stopping = s.stop().then(() => (stopped = true));
    ex.finish(0);
    await settle();
    expect(stopped).toBe(false);
    expect(ex.ids()).toEqual([['a'], ['b']]);
    ex.finish(1);
    await stopping;
    expect(s.pendingCount + s.inflightCount).toBe(0);
  });
});

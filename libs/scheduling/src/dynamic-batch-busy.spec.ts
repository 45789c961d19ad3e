import type { ModelConfig, ModelDynamicBatching } from '@nereid/model-config';
import type { ExecutionItem } from '@nereid/protocol';
import { FakeClock } from './clock';
import { createScheduler } from './scheduler';
import { FakeExecutor, SinkLog, responseFor, settle } from './spec-helpers';

/**
 * A model whose every batch takes `runMs` on the fake clock. `depth` is what the instance says it
 * accepts at once (a python stub or a worker-thread session takes 2).
 */
function slowModel(db: ModelDynamicBatching, opts: { max?: number; depth?: number; instances?: number; runMs?: number } = {}) {
  const clock = new FakeClock(0);
  const log = new SinkLog();
  const batches: { instance: number; ids: string[]; startedAt: number }[] = [];
  const execute = (instance: number, items: ExecutionItem[]): Promise<void> =>
    new Promise<void>((resolve) => {
      batches.push({ instance, ids: items.map((i) => i.request.id), startedAt: clock.now() });
      clock.setTimer(() => {
        for (const item of items) item.sink.send(responseFor(item.request), true);
        resolve();
      }, opts.runMs ?? 1000);
    });
  const config: ModelConfig = { max_batch_size: opts.max ?? 8, dynamic_batching: db };
  const s = createScheduler(config, { instanceCount: opts.instances ?? 1, depth: opts.depth ?? 2, execute, clock });
  /** Advances the clock in steps so that freed instances (promise callbacks) take their next batch. */
  const run = async (ms: number, step = 10) => {
    for (let t = 0; t < ms; t += step) {
      clock.advance(step);
      await settle();
    }
  };
  return { clock, log, s, batches, run, ids: () => batches.map((b) => b.ids) };
}

describe('DynamicBatchScheduler while every instance is busy', () => {
  it.each([1, 2])('a 1 s model sent 5 requests 50 ms apart runs [0] then [1,2,3,4] (instance depth %i)', async (depth) => {
    const { log, s, ids, run, batches } = slowModel({}, { depth });
    for (let i = 0; i < 5; i++) {
      s.enqueue(log.item({ id: String(i) }));
      await run(50);
    }
    expect(ids()).toEqual([['0']]);
    expect(s.pendingCount).toBe(4);
    await run(1000);
    expect(ids()).toEqual([['0'], ['1', '2', '3', '4']]);
    expect(batches[1].startedAt).toBe(1000);
    await run(1000);
    expect(log.finals()).toEqual(['0', '1', '2', '3', '4']);
    expect(s.pendingCount + s.inflightCount).toBe(0);
  });

  it('arms no timer for the queue delay while the batch can only wait for a free instance', async () => {
    const { clock, log, s, ids, run } = slowModel({ max_queue_delay_microseconds: 100_000 });
    s.enqueue(log.item({ id: 'a' }));
    await run(100);
    expect(ids()).toEqual([['a']]);
    s.enqueue(log.item({ id: 'b' }));
    // Only a's run is timed: the delay of b's batch is not looked at until the instance frees.
    expect(clock.pendingTimers).toBe(1);
    await run(300);
    s.enqueue(log.item({ id: 'c' }));
    await run(700);
    // b waited longer than its delay: the batch goes as soon as the instance is free, with c.
    expect(ids()).toEqual([['a'], ['b', 'c']]);
  });

  it('hands a pipelining instance a batch ahead only when nothing queued later could join it', async () => {
    const { log, s, ids } = slowModel({}, { max: 4, depth: 2 });
    s.enqueue(log.item({ id: 'a' }));
    for (const id of ['b', 'c', 'd']) s.enqueue(log.item({ id }));
    expect(ids()).toEqual([['a']]);
    s.enqueue(log.item({ id: 'e' })); // b..e is a full batch: it goes ahead
    expect(ids()).toEqual([['a'], ['b', 'c', 'd', 'e']]);
    s.enqueue(log.item({ id: 'f', inputs: { IN: [4, 4] } })); // full by itself, but depth 2 is used up
    expect(ids()).toHaveLength(2);
    expect(s.pendingCount).toBe(1);
  });

  it('hands a batch ahead when the next request cannot join it (different shape)', () => {
    const { log, s, ids } = slowModel({}, { max: 4, depth: 2 });
    s.enqueue(log.item({ id: 'a' }));
    s.enqueue(log.item({ id: 'b' }));
    expect(ids()).toEqual([['a']]);
    s.enqueue(log.item({ id: 'c', inputs: { IN: [1, 8] } }));
    expect(ids()).toEqual([['a'], ['b']]);
  });

  it('a batch growing behind a pipelining instance counts each request by its rows: it goes ahead once they reach max_batch_size', () => {
    const { log, s, ids } = slowModel({}, { max: 4, depth: 2 });
    s.enqueue(log.item({ id: 'a' }));
    s.enqueue(log.item({ id: 'b', inputs: { IN: [2, 4] } }));
    s.enqueue(log.item({ id: 'c' }));
    expect(ids()).toEqual([['a']]);
    s.enqueue(log.item({ id: 'd' }));
    expect(ids()).toEqual([['a'], ['b', 'c', 'd']]);
  });

  it('a request cancelled while its batch grows behind a pipelining instance is answered CANCELLED when the batch is next formed', async () => {
    const { log, s, ids, run } = slowModel({}, { max: 4, depth: 2 });
    const left = new AbortController();
    s.enqueue(log.item({ id: 'a' }));
    s.enqueue(log.item({ id: 'gone', signal: left.signal }));
    s.enqueue(log.item({ id: 'b' }));
    left.abort();
    s.enqueue(log.item({ id: 'c' }));
    expect(log.errors()).toEqual([]);
    // Four rows queued: the batch is formed again, without the cancelled one, and is not full.
    s.enqueue(log.item({ id: 'd' }));
    expect(log.errors()).toEqual([{ id: 'gone', code: 'CANCELLED', message: '[request id: gone] Request was cancelled before it ran' }]);
    expect(ids()).toEqual([['a']]);
    s.enqueue(log.item({ id: 'e' }));
    expect(ids()).toEqual([['a'], ['b', 'c', 'd', 'e']]);
    await run(2000);
    expect(log.finals()).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('runs every request alone ahead on a pipelining instance when the model does not batch', () => {
    const { log, s, ids } = slowModel({}, { max: 0, depth: 2 });
    for (const id of ['a', 'b', 'c']) s.enqueue(log.item({ id, inputs: { IN: [4] } }));
    expect(ids()).toEqual([['a'], ['b']]);
  });

  it('an idle instance takes the batch at once while another is busy', async () => {
    const { log, s, batches, run } = slowModel({}, { instances: 2, depth: 2 });
    s.enqueue(log.item({ id: 'a' }));
    await run(50);
    s.enqueue(log.item({ id: 'b' }));
    expect(batches.map((b) => [b.instance, b.ids])).toEqual([
      [0, ['a']],
      [1, ['b']],
    ]);
    s.enqueue(log.item({ id: 'c' }));
    s.enqueue(log.item({ id: 'd' }));
    await run(950);
    expect(batches.map((b) => [b.instance, b.ids])[2]).toEqual([0, ['c', 'd']]);
  });

  it('max_queue_size 1: one request waits behind the busy instance, the next is refused', async () => {
    const { log, s, ids, run } = slowModel({ default_queue_policy: { max_queue_size: 1 } }, { depth: 2 });
    s.enqueue(log.item({ id: 'a' }));
    await run(50);
    s.enqueue(log.item({ id: 'b' }));
    await run(50);
    s.enqueue(log.item({ id: 'c' }));
    expect(s.pendingCount).toBe(1);
    expect(log.errors()).toEqual([{ id: 'c', code: 'UNAVAILABLE', message: '[request id: c] Exceeds maximum queue size' }]);
    await run(2000);
    expect(ids()).toEqual([['a'], ['b']]);
    expect(log.finals()).toEqual(['a', 'b']);
  });

  it('timeout_action REJECT at 300 ms rejects a request waiting for the busy instance at 300 ms, never runs it', async () => {
    const policy = { default_timeout_microseconds: 300_000, timeout_action: 'REJECT' } as const;
    const { clock, log, s, ids, run } = slowModel({ default_queue_policy: policy }, { depth: 2 });
    s.enqueue(log.item({ id: 'a' }));
    await run(50);
    s.enqueue(log.item({ id: 'b' }));
    await run(290);
    expect(log.errors()).toEqual([]);
    await run(20);
    expect(log.errors()).toEqual([{ id: 'b', code: 'UNAVAILABLE', message: 'Request timeout expired' }]);
    expect(clock.now()).toBeLessThan(400);
    await run(2000);
    expect(ids()).toEqual([['a']]);
  });

  it('DELAY moves a timed-out request behind later ones while the instance is busy', async () => {
    const policy = { default_timeout_microseconds: 300_000, timeout_action: 'DELAY' } as const;
    const { log, s, ids, run } = slowModel({ default_queue_policy: policy }, { max: 2 });
    s.enqueue(log.item({ id: 'a' }));
    s.enqueue(log.item({ id: 'late' }));
    await run(800); // late expired at 300
    s.enqueue(log.item({ id: 'b' }));
    s.enqueue(log.item({ id: 'c' }));
    await run(200);
    expect(ids()).toEqual([['a'], ['b', 'c']]);
    await run(1000);
    expect(ids()).toEqual([['a'], ['b', 'c'], ['late']]);
  });
});

describe('DynamicBatchScheduler with a hand-finished executor', () => {
  it('a batch behind a pipelining instance grows until the instance is idle, unless it is full', async () => {
    const ex = new FakeExecutor();
    const log = new SinkLog();
    const s = createScheduler({ max_batch_size: 3, dynamic_batching: {} }, { instanceCount: 1, depth: 2, execute: ex.execute, clock: new FakeClock() });
    for (const id of ['a', 'b', 'c', 'd', 'e']) s.enqueue(log.item({ id }));
    // b..d is full: it goes ahead to the pipelining instance; e waits and grows.
    expect(ex.ids()).toEqual([['a'], ['b', 'c', 'd']]);
    s.enqueue(log.item({ id: 'f' }));
    ex.finish(0);
    await settle();
    // The instance still has b..d to run: e, f keep growing.
    expect(ex.ids()).toEqual([['a'], ['b', 'c', 'd']]);
    ex.finish(1);
    await settle();
    expect(ex.ids()).toEqual([['a'], ['b', 'c', 'd'], ['e', 'f']]);
  });
});

import { FakeClock } from './clock';
import { createScheduler } from './scheduler';
import { DefaultScheduler } from './default-scheduler';
import { FakeExecutor, SinkLog, settle } from './spec-helpers';

describe('DefaultScheduler', () => {
  it('is chosen when the config has no dynamic_batching', () => {
    const ex = new FakeExecutor();
    expect(createScheduler({ max_batch_size: 8 }, { instanceCount: 1, execute: ex.execute })).toBeInstanceOf(DefaultScheduler);
  });

  it('sends each request alone, one per free instance, and queues FIFO when all are busy', async () => {
    const log = new SinkLog();
    const ex = new FakeExecutor();
    const s = createScheduler({ max_batch_size: 8 }, { instanceCount: 2, execute: ex.execute, clock: new FakeClock() });
    for (const id of ['a', 'b', 'c', 'd']) s.enqueue(log.item({ id }));
    expect(ex.ids()).toEqual([['a'], ['b']]);
    expect(ex.batches.map((b) => b.instance)).toEqual([0, 1]);
    expect(s.pendingCount).toBe(2);
    expect(s.inflightCount).toBe(2);

    ex.finish(1);
    await settle();
    expect(ex.ids()).toEqual([['a'], ['b'], ['c']]);
    expect(ex.batches[2].instance).toBe(1);
    ex.finish(0);
    await settle();
    expect(ex.ids()[3]).toEqual(['d']);
    expect(ex.batches[3].instance).toBe(0);
    expect(log.finals()).toEqual(['b', 'a']);
  });

  it('fails unanswered requests of a rejected execute and frees the instance', async () => {
    const log = new SinkLog();
    const ex = new FakeExecutor();
    const s = createScheduler({}, { instanceCount: 1, execute: ex.execute });
    s.enqueue(log.item({ id: 'a' }));
    s.enqueue(log.item({ id: 'b' }));
    ex.batches[0].done.reject(new Error('backend crashed'));
    await settle();
    expect(log.errors()).toEqual([{ id: 'a', code: 'INTERNAL', message: 'backend crashed' }]);
    expect(ex.ids()).toEqual([['a'], ['b']]);
    expect(s.inflightCount).toBe(1);
  });

  it('survives an execute that throws synchronously', async () => {
    const log = new SinkLog();
    const s = createScheduler({}, {
      instanceCount: 1,
      execute: () => {
        throw new Error('sync boom');
      },
    });
    for (const id of ['a', 'b', 'c']) s.enqueue(log.item({ id }));
    await settle();
    expect(log.errors().map((e) => [e.id, e.message])).toEqual([['a', 'sync boom'], ['b', 'sync boom'], ['c', 'sync boom']]);
    expect(s.pendingCount).toBe(0);
    expect(s.inflightCount).toBe(0);
  });

  it('stop() waits for queued and running work, then rejects new requests', async () => {
    const log = new SinkLog();
    const ex = new FakeExecutor();
    const s = createScheduler({}, { instanceCount: 1, execute: ex.execute });
    s.enqueue(log.item({ id: 'a' }));
    s.enqueue(log.item({ id: 'b' }));
    let stopped = false;
    const stopping = s.stop().then(() => (stopped = true));
    s.enqueue(log.item({ id: 'late' }));
    expect(log.errors()).toEqual([{
      id: 'late',
      code: 'UNAVAILABLE',
      message: "[request id: late] Server is stopping: model 'm' is not accepting new requests",
    }]);
    ex.finish(0);
    await settle();
    expect(stopped).toBe(false);
    ex.finish(1);
    await stopping;
    expect(log.finals()).toEqual(['a', 'b']);
  });

  it('answers CANCELLED, and never runs, a queued request whose client went away', async () => {
    const log = new SinkLog();
    const ex = new FakeExecutor();
    const s = createScheduler({}, { instanceCount: 1, execute: ex.execute });
    const gone = [new AbortController(), new AbortController()];
    s.enqueue(log.item({ id: 'running' }));
    s.enqueue(log.item({ id: 'left1', signal: gone[0].signal }));
    s.enqueue(log.item({ id: 'stays' }));
    s.enqueue(log.item({ id: 'left2', signal: gone[1].signal }));
    for (const c of gone) c.abort();
    ex.finish(0);
    await settle();
    ex.finish(1);
    await settle();
    expect(ex.ids()).toEqual([['running'], ['stays']]);
    expect(log.errors()).toEqual([
      { id: 'left1', code: 'CANCELLED', message: '[request id: left1] Request was cancelled before it ran' },
      { id: 'left2', code: 'CANCELLED', message: '[request id: left2] Request was cancelled before it ran' },
    ]);
    expect(log.finals()).toEqual(['running', 'stays']);
    expect(s.pendingCount + s.inflightCount).toBe(0);
  });

  it('hands an instance of depth 2 a second request while it runs one, idle instances first', async () => {
    const log = new SinkLog();
    const ex = new FakeExecutor();
    const s = createScheduler({}, { instanceCount: 2, depth: 2, execute: ex.execute });
    for (const id of ['a', 'b', 'c', 'd', 'e']) s.enqueue(log.item({ id }));
    expect(ex.batches.map((b) => [b.ids[0], b.instance])).toEqual([['a', 0], ['b', 1], ['c', 0], ['d', 1]]);
    expect(s.pendingCount).toBe(1);
    ex.finish(1);
    await settle();
    expect(ex.batches[4]).toMatchObject({ ids: ['e'], instance: 1 });
  });

  it('stop() resolves at once when idle', async () => {
    const s = createScheduler({}, { instanceCount: 3, execute: new FakeExecutor().execute });
    await expect(s.stop()).resolves.toBeUndefined();
  });
});

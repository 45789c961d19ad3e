/**
 * End-to-end: the dynamic batcher forms a batch when the model's instance can start it. A slow
 * python model (record_wait: writes each executed request's id, then sleeps WAIT_MS) batches up to
 * 8 requests on one instance; requests that arrive while it runs wait in the queue, where the
 * batch keeps growing and the queue policy still applies, until the instance is free.
 */
import { sleep, until } from './helpers/poll';
import { executedIds, recordWaitVariant } from './helpers/record-wait';
import { getJson, makeRepository, postJson, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;
type Msg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('dynamic batching behind a busy instance', () => {
  let server: Server;
  let repo: string;
  beforeAll(async () => {
    repo = makeRepository({});
    recordWaitVariant(repo, 'grows', 8, 'dynamic_batching { }');
    recordWaitVariant(repo, 'queue_size_1', 8, 'dynamic_batching { default_queue_policy { max_queue_size: 1 } }');
    recordWaitVariant(repo, 'reject_300ms', 8, 'dynamic_batching { default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 300000 } }');
    server = await startTestServer({ modelRepositories: [repo] });
  }, 60_000);
  afterAll(() => server?.close());

  const executed = (model: string): string[] => executedIds(repo, model);
  const infer = (model: string, id: string, waitMs: number) =>
    postJson(`${server.http}/v2/models/${model}/infer`, { id, inputs: [{ name: 'WAIT_MS', datatype: 'INT32', shape: [1, 1], data: [waitMs] }] });
  const stats = async (model: string) => ((await getJson(`${server.http}/v2/models/${model}/stats`)).body as Msg).model_stats[0];
  /** Sends `first` (it holds the instance for `busyMs`) and waits until the model runs it. */
  async function busy(model: string, busyMs: number) {
    let doneAt = Infinity;
    const answer = infer(model, 'busy', busyMs).then((r) => ((doneAt = Date.now()), r));
    await until(`${model} to run its first request`, () => executed(model).includes('busy'));
    return { answer, doneAt: () => doneAt };
  }

  it('a 1.5 s model sent 4 more requests 50 ms apart while it runs the first runs batches [1] and [4]', async () => {
    const first = await busy('grows', 1500);
    const rest: ReturnType<typeof infer>[] = [];
    for (const id of ['1', '2', '3', '4']) {
      rest.push(infer('grows', id, 10));
      await sleep(50);
    }
    const sentAt = Date.now();
    expect((await first.answer).status).toBe(200);
    // Causal precondition: all four were queued before the first batch ended.
    expect(sentAt).toBeLessThan(first.doneAt());
    expect((await Promise.all(rest)).map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(executed('grows')).toEqual(['busy', '1', '2', '3', '4']);
    const s = await stats('grows');
    expect(s.execution_count).toBe(2);
    expect(s.inference_count).toBe(5);
    const sizes = (s.batch_stats as Msg[]).map((b) => [Number(b.batch_size), Number(b.compute_infer.count)]).sort((a, b) => a[0] - b[0]);
    expect(sizes).toEqual([
      [1, 1],
      [4, 1],
    ]);
  }, 30_000);

  it('max_queue_size 1 holds one request behind the busy instance and refuses the next', async () => {
    const first = await busy('queue_size_1', 1500);
    const queued = infer('queue_size_1', 'queued', 0);
    await sleep(100);
    const refused = await infer('queue_size_1', 'refused', 0);
    expect(refused).toMatchObject({ status: 503, body: { error: expect.stringContaining('Exceeds maximum queue size') } });
    expect(Date.now()).toBeLessThan(first.doneAt());
    expect((await first.answer).status).toBe(200);
    expect((await queued).status).toBe(200);
    expect(executed('queue_size_1')).toEqual(['busy', 'queued']);
  }, 30_000);

  it('timeout_action REJECT at 300 ms rejects a request waiting for the busy instance before it frees, never runs it', async () => {
    const first = await busy('reject_300ms', 2000);
    const rejected = await infer('reject_300ms', 'late', 0);
    const rejectedAt = Date.now();
    expect(rejected).toMatchObject({ status: 503, body: { error: 'Request timeout expired' } });
    expect((await first.answer).status).toBe(200);
    expect(rejectedAt).toBeLessThan(first.doneAt());
    expect(executed('reject_300ms')).toEqual(['busy']);
  }, 30_000);
});

import type { ModelSequenceBatching } from '@nereid/model-config';
import { CONTROLS, sequenceModel } from './sequence-spec-helpers';

const oldest = (o: ModelSequenceBatching['oldest'] = {}, more: ModelSequenceBatching = {}): ModelSequenceBatching => ({
  control_input: CONTROLS,
  oldest: { max_candidate_sequences: 4, ...o },
  ...more,
});

describe('SequenceBatchScheduler, oldest strategy', () => {
  it("batches the front requests of the instance's candidate sequences, at most one per sequence", async () => {
    const { ex, send, finish } = sequenceModel(oldest(), { max: 4 });
    send('a1', 1n, { start: true });
    send('a2', 1n);
    send('a3', 1n, { end: true });
    send('b1', 2n, { start: true });
    send('b2', 2n);
    expect(ex.ids()).toEqual([['a1']]);
    await finish(0);
    // b1 (queued while a1 ran) and a2 (a's next once a1 completed): one request of each sequence.
    expect(ex.ids()[1]).toEqual(['b1', 'a2']);
    await finish(1);
    expect(ex.ids()[2]).toEqual(['b2', 'a3']);
    expect(ex.rows(2).map((r) => [r.id, r.controls])).toEqual([
      ['b2', { START: 0, END: 0, READY: 1, CORRID: 2n }],
      ['a3', { START: 0, END: 1, READY: 1, CORRID: 1n }],
    ]);
    await finish(2);
  });

  it('keeps each sequence in order and never pads', async () => {
    const { ex, log, send, finish } = sequenceModel(oldest(), { max: 8 });
    for (let step = 0; step < 3; step++) {
      for (const seq of [1n, 2n, 3n]) send(`${seq}-${step}`, seq, { start: step === 0, end: step === 2 });
    }
    for (let n = 0; n < ex.batches.length; n++) await finish(n);
    expect(ex.ids()).toEqual([['1-0'], ['2-0', '3-0', '1-1'], ['2-1', '3-1', '1-2'], ['2-2', '3-2']]);
    expect(ex.ids().flat()).not.toContain('pad');
    const order = log.finals();
    for (const seq of ['1', '2', '3']) expect(order.filter((id) => id.startsWith(seq))).toEqual([`${seq}-0`, `${seq}-1`, `${seq}-2`]);
  });

  it('holds max_candidate_sequences sequences per instance; others wait in the backlog', async () => {
    const { ex, s, send, finish } = sequenceModel(oldest({ max_candidate_sequences: 2 }), { max: 4, instances: 2 });
    for (const seq of [1n, 2n, 3n, 4n, 5n]) send(`s${seq}`, seq, { start: true });
    expect(s.sequenceSlotsInUse).toBe(4);
    expect(s.backlogSequences).toBe(1);
    // Slot 0 of each instance first: 1 -> i0, 2 -> i1; then slot 1: 3 -> i0, 4 -> i1.
    expect(ex.batches.map((b) => [b.instance, b.items.map((i) => i.request.id)])).toEqual([
      [0, ['s1']],
      [1, ['s2']],
    ]);
    await finish(0);
    await finish(1);
    expect(ex.batches.slice(2).map((b) => [b.instance, b.items.map((i) => i.request.id)])).toEqual([
      [0, ['s3']],
      [1, ['s4']],
    ]);
    // 4 ends on instance 1: its slot is given back as the END is handed to the batcher (once s4 is
    // complete), and 5 takes it, to run once the END is complete.
    send('s4-end', 4n, { end: true });
    expect(s.backlogSequences).toBe(1);
    await finish(3);
    expect(s.backlogSequences).toBe(0);
    expect(ex.batches[4].instance).toBe(1);
    expect(ex.ids()[4]).toEqual(['s4-end']);
    await finish(4);
    expect(ex.ids()[5]).toEqual(['s5']);
    expect(ex.batches[5].instance).toBe(1);
  });

  it('sends a preferred batch size at once and otherwise waits max_queue_delay_microseconds', async () => {
    const { clock, ex, send, finish } = sequenceModel(oldest({ preferred_batch_size: [2], max_queue_delay_microseconds: 5000 }), { max: 4 });
    send('a1', 1n, { start: true });
    expect(ex.batches).toHaveLength(0);
    send('b1', 2n, { start: true });
    expect(ex.ids()).toEqual([['a1', 'b1']]);
    await finish(0);
    send('a2', 1n);
    clock.advance(4.9);
    expect(ex.batches).toHaveLength(1);
    clock.advance(0.1);
    expect(ex.ids()[1]).toEqual(['a2']);
  });

  it('with preserve_ordering, delivers the responses of a batch in arrival order', async () => {
    const { ex, log, send } = sequenceModel(oldest({ preserve_ordering: true, preferred_batch_size: [2], max_queue_delay_microseconds: 1000 }), {
      max: 4,
    });
    send('a1', 1n, { start: true });
    send('b1', 2n, { start: true });
    expect(ex.ids()).toEqual([['a1', 'b1']]);
    const [a1, b1] = ex.batches[0].items;
    const respond = (item: typeof a1) => item.sink.send({ id: item.request.id, modelName: 'm', modelVersion: '1', outputs: [] }, true);
    respond(b1);
    expect(log.finals()).toEqual([]);
    respond(a1);
    expect(log.finals()).toEqual(['a1', 'b1']);
  });

  it('frees a candidate slot after idle expiry and a cancelled sequence', async () => {
    const { clock, log, s, send, finish } = sequenceModel(oldest({}, { max_sequence_idle_microseconds: 100_000 }), { max: 4 });
    const gone = new AbortController();
    send('a1', 1n, { start: true });
    send('b1', 2n, { start: true });
    send('b2', 2n, { signal: gone.signal });
    gone.abort();
    await finish(0);
    await finish(1);
    expect(log.errors().map((e) => [e.id, e.code])).toEqual([['b2', 'CANCELLED']]);
    expect(s.sequenceSlotsInUse).toBe(1);
    clock.advance(100);
    expect(s.sequenceSlotsInUse).toBe(0);
    expect(s.pendingCount + s.inflightCount).toBe(0);
  });
});

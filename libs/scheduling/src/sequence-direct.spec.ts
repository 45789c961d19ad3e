import { SequenceBatchScheduler } from './sequence-batch-scheduler';
import { CONTROLS, sequenceModel } from './sequence-spec-helpers';
import { settle } from './spec-helpers';

describe('SequenceBatchScheduler, direct strategy', () => {
  it('is chosen for every config with sequence_batching, dynamic_batching or not', () => {
    expect(sequenceModel({}).s).toBeInstanceOf(SequenceBatchScheduler);
    expect(sequenceModel({ oldest: { max_candidate_sequences: 2 } }, { config: { dynamic_batching: {} } }).s).toBeInstanceOf(
      SequenceBatchScheduler,
    );
  });

  it('binds each sequence to one slot of one instance, lowest slot first across instances', async () => {
    const { ex, s, send, finish } = sequenceModel({ control_input: CONTROLS }, { max: 2, instances: 2 });
    send('a1', 1n, { start: true });
    send('b1', 2n, { start: true });
    send('c1', 3n, { start: true });
    // a: instance 0 slot 0 (runs at once); b: instance 1 slot 0; c: instance 0 slot 1, waits for instance 0.
    expect(ex.batches.map((b) => [b.instance, ...ex.ids()[ex.batches.indexOf(b)]])).toEqual([
      [0, 'a1'],
      [1, 'b1'],
    ]);
    expect(s.sequenceSlotsInUse).toBe(3);
    send('a2', 1n);
    await finish(0);
    // Instance 0 runs slots 0 and 1 together: a's second request and c's first.
    expect(ex.batches[2].instance).toBe(0);
    expect(ex.ids()[2]).toEqual(['a2', 'c1']);
    send('b2', 2n, { end: true });
    await finish(1);
    expect(ex.batches[3].instance).toBe(1);
    expect(ex.ids()[3]).toEqual(['b2']);
    await finish(3);
    expect(s.sequenceSlotsInUse).toBe(2);
  });

  it('makes slots as sequences need them: a max_batch_size of 2^31 - 1 costs nothing up front (issue 16)', async () => {
    // Made up front, 5 M slots took 690 MiB and 1.4 s; 2^31 - 1 (a config a repository load may carry) the process.
    for (const oldest of [undefined, { max_candidate_sequences: 2147483647 }]) {
      const t0 = performance.now();
      const { ex, s, send, finish } = sequenceModel({ control_input: CONTROLS, oldest }, { max: 2147483647, instances: 2 });
      expect(performance.now() - t0).toBeLessThan(500);
      send('a1', 1n, { start: true });
      send('b1', 2n, { start: true });
      expect(s.sequenceSlotsInUse).toBe(2);
      send('c1', 3n, { start: true, end: true });
      await finish(0);
      await finish(1);
      if (ex.batches.length > 2) await finish(2);
      expect(ex.ids().flat().filter((id) => id !== 'pad').sort()).toEqual(['a1', 'b1', 'c1']);
      // c ended: its slot is free again and is the next one handed out (lowest first).
      expect(s.sequenceSlotsInUse).toBe(2);
      send('d1', 4n, { start: true });
      expect(s.sequenceSlotsInUse).toBe(3);
    }
  });

  it('fills the slots below the highest ready one with READY=false padding rows', async () => {
    const { ex, log, send, finish } = sequenceModel({ control_input: CONTROLS }, { max: 4 });
    send('a1', 10n, { start: true });
    send('b1', 20n, { start: true });
    send('c1', 30n, { start: true });
    await finish(0);
    // a in slot 0, b slot 1, c slot 2; only c sends its next request.
    send('c2', 30n);
    await finish(1);
    expect(ex.ids()[2]).toEqual(['pad', 'pad', 'c2']);
    const rows = ex.rows(2);
    expect(rows[0]).toEqual({ id: '', padding: true, controls: { START: 0, END: 0, READY: 0, CORRID: 0n } });
    expect(rows[2]).toEqual({ id: 'c2', padding: false, controls: { START: 0, END: 0, READY: 1, CORRID: 30n } });
    // Padding rows have zero data shaped like the live row; nobody hears their responses.
    const pad = ex.batches[2].items[0].request;
    expect(pad.inputs.find((t) => t.name === 'IN')).toEqual({ name: 'IN', datatype: 'FP32', shape: [1, 1], data: new Float32Array(1) });
    // The padding rows of a batch share one zero tensor per input (as Triton's null requests share
    // a buffer): a large row and a far slot cost one copy, not one per empty slot.
    const second = ex.batches[2].items[1].request;
    expect(second).not.toBe(pad);
    expect(second.inputs.find((t) => t.name === 'IN')).toBe(pad.inputs.find((t) => t.name === 'IN'));
    await finish(2);
    expect(log.finals()).toEqual(['a1', 'b1', 'c1', 'c2']);
  });

  it('writes START/END/READY for the first, middle, last and single-request rows', async () => {
    const { ex, send, finish } = sequenceModel({ control_input: CONTROLS }, { max: 4 });
    send('first', 1n, { start: true });
    send('single', 2n, { start: true, end: true });
    expect(ex.rows(0).map((r) => r.controls)).toEqual([{ START: 1, END: 0, READY: 1, CORRID: 1n }]);
    send('middle', 1n);
    await finish(0);
    expect(ex.rows(1).map((r) => [r.id, r.controls])).toEqual([
      ['middle', { START: 0, END: 0, READY: 1, CORRID: 1n }],
      ['single', { START: 1, END: 1, READY: 1, CORRID: 2n }],
    ]);
    send('last', 1n, { end: true });
    await finish(1);
    expect(ex.rows(2).map((r) => r.controls)).toEqual([{ START: 0, END: 1, READY: 1, CORRID: 1n }]);
  });

  it('leaves a request that cannot share the batch (other input or state shape) for the next execution', async () => {
    const state = { input_name: 'S_IN', output_name: 'S_OUT', data_type: 'TYPE_FP32', dims: [-1] };
    const { ex, send, finish } = sequenceModel({ control_input: CONTROLS, state: [state] }, { max: 4 });
    send('a1', 1n, { start: true });
    send('b1', 2n, { start: true, inputs: { IN: [1, 3] } });
    // a's state grows to 2 elements; b's stays at 1.
    await finish(0, () => [{ name: 'S_OUT', datatype: 'FP32', shape: [1, 2], data: new Float32Array(2) }]);
    expect(ex.ids()[1]).toEqual(['pad', 'b1']);
    send('a2', 1n);
    send('c1', 3n, { start: true });
    await finish(1);
    // c starts with the initial state ([1, 1]), which a's [1, 2] state cannot be batched with.
    expect(ex.ids()[2]).toEqual(['a2', 'pad', 'pad']);
    await finish(2);
    expect(ex.ids()[3]).toEqual(['pad', 'pad', 'c1']);
  });

  it('puts sequences that find no free slot in a FIFO backlog until a slot frees', async () => {
    const { ex, log, s, send, finish } = sequenceModel({ control_input: CONTROLS }, { max: 1 });
    send('a1', 1n, { start: true });
    send('b1', 2n, { start: true });
    send('c1', 3n, { start: true, end: true });
    send('b2', 2n, { end: true });
    expect(s.backlogSequences).toBe(2);
    expect(s.pendingCount).toBe(3);
    send('a2', 1n, { end: true });
    await finish(0);
    expect(ex.ids()).toEqual([['a1'], ['a2']]);
    await finish(1);
    // a ended: b (first in the backlog) takes the slot with both its requests, one per execution.
    expect(ex.ids()[2]).toEqual(['b1']);
    await finish(2);
    expect(ex.ids()[3]).toEqual(['b2']);
    await finish(3);
    expect(ex.ids()[4]).toEqual(['c1']);
    await finish(4);
    expect(log.finals()).toEqual(['a1', 'a2', 'b1', 'b2', 'c1']);
    expect(s.sequenceSlotsInUse).toBe(0);
    expect(s.pendingCount + s.inflightCount).toBe(0);
  });

  it("fails a backlogged sequence whose request timeout expires, every request of it, with Triton's words", async () => {
    const { clock, log, s, send } = sequenceModel({ control_input: CONTROLS, max_sequence_idle_microseconds: 60_000_000 }, { max: 1 });
    send('a1', 1n, { start: true });
    send('b1', 2n, { start: true, timeoutUs: 100_000 });
    send('b2', 2n);
    clock.advance(99);
    expect(log.errors()).toEqual([]);
    clock.advance(1);
    expect(log.errors()).toEqual([
      { id: 'b1', code: 'UNAVAILABLE', message: 'timeout of the corresponding sequence has been expired' },
      { id: 'b2', code: 'UNAVAILABLE', message: 'timeout of the corresponding sequence has been expired' },
    ]);
    expect(s.backlogSequences).toBe(0);
    send('b3', 2n);
    expect(log.errors()[2].message).toBe(
      "inference request for sequence 2 to model 'm' must specify the START flag on the first request of the sequence",
    );
    // The timeout does not apply once a sequence has a slot.
    send('a2', 1n, { timeoutUs: 1 });
    clock.advance(10);
    expect(log.errors()).toHaveLength(3);
  });

  it('frees the slot and state of a sequence idle for max_sequence_idle_microseconds', async () => {
    const { clock, ex, log, s, send, finish } = sequenceModel({ control_input: CONTROLS, max_sequence_idle_microseconds: 500_000 }, { max: 2 });
    send('a1', 1n, { start: true });
    send('b1', 2n, { start: true });
    await finish(0);
    await finish(1);
    expect(s.sequenceSlotsInUse).toBe(2);
    clock.advance(300);
    send('b2', 2n);
    await finish(2);
    clock.advance(200); // a idle for 500 ms: its slot goes back
    await settle();
    expect(s.sequenceSlotsInUse).toBe(1);
    send('a2', 1n);
    expect(log.errors()).toEqual([
      {
        id: 'a2',
        code: 'INVALID_ARG',
        message: "inference request for sequence 1 to model 'm' must specify the START flag on the first request of the sequence",
      },
    ]);
    clock.advance(300);
    await settle();
    expect(s.sequenceSlotsInUse).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    expect(ex.batches).toHaveLength(3);
  });

  it('waits for minimum_slot_utilization or max_queue_delay_microseconds when both are set', async () => {
    const sb = { control_input: CONTROLS, direct: { minimum_slot_utilization: 0.5, max_queue_delay_microseconds: 10_000 } };
    const { clock, ex, send, finish } = sequenceModel(sb, { max: 4 });
    send('a1', 1n, { start: true });
    expect(ex.batches).toHaveLength(0);
    send('b1', 2n, { start: true }); // 2 of 4 slots ready: runs
    expect(ex.ids()).toEqual([['a1', 'b1']]);
    await finish(0);
    send('a2', 1n);
    clock.advance(9.9);
    expect(ex.batches).toHaveLength(1);
    clock.advance(0.1);
    expect(ex.ids()[1]).toEqual(['a2']); // rows up to the highest ready slot only
  });

  it('runs as soon as one slot is ready when only a delay is set', () => {
    const { ex, send } = sequenceModel({ control_input: CONTROLS, direct: { max_queue_delay_microseconds: 10_000 } }, { max: 4 });
    send('a1', 1n, { start: true });
    expect(ex.ids()).toEqual([['a1']]);
  });

  it('answers a queued request whose client went away CANCELLED and frees its sequence', async () => {
    const { ex, log, s, send, finish } = sequenceModel({ control_input: CONTROLS }, { max: 1 });
    const gone = new AbortController();
    send('a1', 1n, { start: true });
    send('a2', 1n, { signal: gone.signal });
    send('a3', 1n);
    send('b1', 2n, { start: true });
    gone.abort();
    await finish(0);
    expect(log.errors().map((e) => [e.id, e.code])).toEqual([
      ['a2', 'CANCELLED'],
      ['a3', 'CANCELLED'],
    ]);
    // The slot went to the backlogged sequence.
    expect(ex.ids()[1]).toEqual(['b1']);
    send('a4', 1n);
    expect(log.errors()[2].message).toContain('must specify the START flag');
    await finish(1);
    expect(s.sequenceSlotsInUse).toBe(1);
  });

  it('fails the real rows of an execution that rejects, and goes on', async () => {
    const { ex, log, send } = sequenceModel({ control_input: CONTROLS }, { max: 2 });
    send('a1', 1n, { start: true });
    ex.batches[0].failed(new Error('boom'));
    await settle();
    expect(log.errors()).toEqual([{ id: 'a1', code: 'INTERNAL', message: 'boom' }]);
    send('a2', 1n);
    expect(ex.ids()[1]).toEqual(['a2']);
  });

  it('resolves stop once a backlog that was all that was left has timed out', async () => {
    const { clock, s, send, finish } = sequenceModel({ control_input: CONTROLS, max_sequence_idle_microseconds: 60_000_000 }, { max: 1 });
    send('a1', 1n, { start: true });
    send('b1', 2n, { start: true, timeoutUs: 50_000 });
    await finish(0);
    let stopped = false;
    void s.stop().then(() => (stopped = true));
    await settle();
    expect(stopped).toBe(false);
    clock.advance(50);
    await settle();
    expect(stopped).toBe(true);
  });

  it('refuses new sequences once stopping, lets live ones finish, and resolves when drained', async () => {
    const { ex, log, s, send, finish } = sequenceModel({ control_input: CONTROLS }, { max: 1 });
    send('a1', 1n, { start: true });
    let stopped = false;
    void s.stop().then(() => (stopped = true));
    send('b1', 2n, { start: true });
    send('a2', 1n, { end: true });
    expect(log.errors()).toEqual([
      { id: 'b1', code: 'UNAVAILABLE', message: 'Server is stopping, scheduler for model has stopped accepting new inference requests' },
    ]);
    await finish(0);
    expect(stopped).toBe(false);
    expect(ex.ids()[1]).toEqual(['a2']);
    await finish(1);
    expect(stopped).toBe(true);
  });
});

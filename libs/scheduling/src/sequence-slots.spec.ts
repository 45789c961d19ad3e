import { newInferenceRequest, type ExecutionItem } from '@nereid/protocol';
import { FakeClock } from './clock';
import { Deque } from './deque';
import { SequenceSlots, type SlotEntry } from './sequence-slots';
import type { SlotRef } from './slot-heap';

/** A request of sequence `id` with its START / END flags. */
function item(id: bigint, start: boolean, end = false): ExecutionItem {
  const request = newInferenceRequest('seq', -1);
  request.sequenceId = id;
  request.sequenceStart = start;
  request.sequenceEnd = end;
  return { request, sink: { send: () => undefined, fail: () => undefined }, enqueuedAt: 0 };
}

describe('SequenceSlots: which slot a new sequence gets', () => {
  /** Starts sequences 1..n (each in its own slot) and records where each was delivered. */
  function table(instances: number, slotsPerInstance: number) {
    const at = new Map<bigint, SlotRef>();
    const slots = new SequenceSlots(instances, slotsPerInstance, 1e9, new FakeClock(), (ref, entry: SlotEntry) => {
      if (typeof entry !== 'symbol') at.set(entry.item.request.sequenceId as bigint, ref);
    });
    const start = (id: bigint): SlotRef | undefined => {
      expect(slots.route(item(id, true), false)).toBeUndefined();
      return at.get(id);
    };
    return { slots, start };
  }

  it("hands out the lowest free slot, then the lowest instance, reusing released slots before fresh ones (Triton's ready_batcher_seq_slots_ order)", () => {
    const { slots, start } = table(2, 1_000_000);
    expect(start(1n)).toEqual({ instance: 0, slot: 0 });
    expect(start(2n)).toEqual({ instance: 1, slot: 0 });
    expect(start(3n)).toEqual({ instance: 0, slot: 1 });
    expect(start(4n)).toEqual({ instance: 1, slot: 1 });
    expect(slots.inUse).toBe(4);
    // Sequences 2 and 3 end (their slots are given back): the next sequences take those slots,
    // lowest first, before the never-used (0,2).
    expect(slots.release({ instance: 0, slot: 1 }, new Deque())).toBeUndefined();
    expect(slots.release({ instance: 1, slot: 0 }, new Deque())).toBeUndefined();
    expect(slots.inUse).toBe(2);
    expect(start(5n)).toEqual({ instance: 1, slot: 0 });
    expect(start(6n)).toEqual({ instance: 0, slot: 1 });
    expect(start(7n)).toEqual({ instance: 0, slot: 2 });
    expect(slots.inUse).toBe(5);
  });

  it('backlogs a sequence once every slot is in use, and gives it the next slot released', () => {
    const { slots, start } = table(2, 1);
    start(1n);
    start(2n);
    expect(start(3n)).toBeUndefined();
    expect(slots.backlogSequences).toBe(1);
    const queue = new Deque<SlotEntry>();
    expect(slots.release({ instance: 1, slot: 0 }, queue)).toBe(3n);
    expect(queue.size).toBe(1);
    expect(slots.inUse).toBe(2);
    expect(slots.backlogSequences).toBe(0);
  });
});

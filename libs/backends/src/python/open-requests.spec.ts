import { EventEmitter } from 'node:events';
import type { ExecutionItem, InferenceRequest } from '@nereid/protocol';
import { OpenRequests, WATCH_AFTER_MS } from './open-requests';
import { CollectingSink, request } from './testing';

/** An item whose signal counts how often it was read (the HTTP front creates it on first read). */
function item(controller = new AbortController()): { item: ExecutionItem; reads: () => number; controller: AbortController } {
  let reads = 0;
  const req: InferenceRequest = request('m', []);
  Object.defineProperty(req, 'signal', { get: () => (reads++, controller.signal) });
  return { item: { request: req, sink: new CollectingSink() }, reads: () => reads, controller };
}

const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('OpenRequests', () => {
  it('does not read the signal of a request answered before WATCH_AFTER_MS', async () => {
    const cancels: [number, number][] = [];
    const open = new OpenRequests(false, 'm', (b, i) => cancels.push([b, i]));
    const a = item();
    open.add(7, 7, a.item);
    open.deliver(7, { id: '', modelName: 'm', modelVersion: '1', outputs: [] }, true);
    await later(WATCH_AFTER_MS + 20);
    expect(a.reads()).toBe(0);
    expect(open.size).toBe(0);
  });

  it('cancels a request whose client goes away once it is watched, or went away before', async () => {
    const cancels: [number, number][] = [];
    const open = new OpenRequests(true, 'm', (b, i) => cancels.push([b, i]));
    const early = item();
    const late = item();
    open.add(10, 10, early.item);
    open.add(11, 10, late.item);
    early.controller.abort();
    await later(WATCH_AFTER_MS + 20);
    expect(cancels).toEqual([[10, 0]]);
    late.controller.abort();
    expect(cancels).toEqual([[10, 0], [10, 1]]);
    open.deliver(11, undefined, true);
    expect(open.size).toBe(1);
  });
});

describe('OpenRequests: requests sharing one signal (a gRPC stream)', () => {
  it('listens once per signal, cancels each open request of it, and lets go when they close', async () => {
    const cancels: [number, number][] = [];
    const open = new OpenRequests(true, 'm', (b, i) => cancels.push([b, i]));
    const controller = new AbortController();
    for (let key = 0; key < 20; key++) open.add(key, 0, item(controller).item);
    await later(WATCH_AFTER_MS + 20);
    expect(EventEmitter.getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    for (let key = 0; key < 18; key++) open.deliver(key, undefined, true);
    expect(EventEmitter.getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    controller.abort();
    expect(cancels).toEqual([[0, 18], [0, 19]]);

    const other = new AbortController();
    for (let key = 100; key < 103; key++) open.add(key, 100, item(other).item);
    await later(WATCH_AFTER_MS + 20);
    for (let key = 100; key < 103; key++) open.deliver(key, undefined, true);
    expect(EventEmitter.getEventListeners(other.signal, 'abort')).toHaveLength(0);
  });

  it("lists a batch's requests still open, in batch order (a decoupled model's log lines after execute returned)", () => {
    const open = new OpenRequests(true, 'm', () => undefined);
    const [a, b, c, other] = [item(), item(), item(), item()];
    open.add(20, 20, a.item);
    open.add(21, 20, b.item);
    open.add(22, 20, c.item);
    open.add(23, 23, other.item);
    expect(open.itemsOf(20)).toEqual([a.item, b.item, c.item]);
    open.deliver(21, undefined, true);
    expect(open.itemsOf(20)).toEqual([a.item, c.item]);
    expect(open.itemsOf(23)).toEqual([other.item]);
    expect(open.itemsOf(99)).toEqual([]);
  });
});

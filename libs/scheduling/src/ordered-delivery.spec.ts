import { InferenceError, type InferenceResponse, type ResponseSink } from '@nereid/protocol';
import { OrderedDelivery } from './ordered-delivery';

const resp = (id: string): InferenceResponse => ({ id, modelName: 'm', modelVersion: '1', outputs: [] });

function recorder(log: string[], name: string): ResponseSink {
  return {
    send: (r, final) => log.push(`${name}:${r?.id ?? '-'}:${final ? 'final' : 'part'}`),
    fail: (e) => log.push(`${name}:fail:${e.message}`),
  };
}

describe('OrderedDelivery', () => {
  it('passes the oldest request through and releases later ones in order (decoupled streams)', () => {
    const log: string[] = [];
    const od = new OrderedDelivery();
    const a = od.wrap(recorder(log, 'a'));
    const b = od.wrap(recorder(log, 'b'));
    const c = od.wrap(recorder(log, 'c'));
    c.send(resp('c1'), true);
    b.send(resp('b1'), false);
    a.send(resp('a1'), false);
    expect(log).toEqual(['a:a1:part']);
    b.send(resp('b2'), false);
    a.send(undefined, true);
    expect(log).toEqual(['a:a1:part', 'a:-:final', 'b:b1:part', 'b:b2:part']);
    b.fail(InferenceError.internal('boom'));
    expect(log.slice(4)).toEqual(['b:fail:boom', 'c:c1:final']);
    expect(od.openCount).toBe(0);
  });

  it('drops calls after a request has ended', () => {
    const log: string[] = [];
    const od = new OrderedDelivery();
    const a = od.wrap(recorder(log, 'a'));
    a.send(resp('a1'), true);
    a.send(resp('a2'), true);
    a.fail(InferenceError.internal('late'));
    expect(log).toEqual(['a:a1:final']);
    const b = od.wrap(recorder(log, 'b'));
    b.send(resp('b1'), true);
    expect(log).toEqual(['a:a1:final', 'b:b1:final']);
  });
});

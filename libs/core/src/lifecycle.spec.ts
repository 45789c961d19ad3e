import { isTransition, LifecycleEvents, type LifecycleEvent } from './lifecycle';

describe('LifecycleEvents', () => {
  it('tells every listener each transition, as plain data', () => {
    const events = new LifecycleEvents();
    const seen: LifecycleEvent[] = [];
    const off = events.on((e) => seen.push(e));
    events.emit({ model: 'm', version: 1, state: 'LOADING', reason: '', key: 'm/1/1' });
    events.emit({ model: 'm', version: 1, state: 'READY', reason: '', key: 'm/1/1' });
    off();
    events.emit({ model: 'm', version: 1, state: 'UNLOADING', reason: '', key: 'm/1/1' });
    expect(seen.map((e) => e.state)).toEqual(['LOADING', 'READY']);
    // Serialisable: what goes over Redis comes back the same.
    expect(JSON.parse(JSON.stringify(seen))).toEqual(seen);
  });

  it('refuses transitions the state machine does not have', () => {
    const events = new LifecycleEvents();
    expect(() => events.emit({ model: 'm', version: 1, state: 'READY', reason: '', key: 'k' })).toThrow(/no transition none -> READY/);
    events.emit({ model: 'm', version: 1, state: 'LOADING', reason: '', key: 'k' });
    expect(() => events.emit({ model: 'm', version: 1, state: 'UNLOADING', reason: '', key: 'k' })).toThrow(/LOADING -> UNLOADING/);
    events.emit({ model: 'm', version: 1, state: 'UNAVAILABLE', reason: 'bad file', key: 'k' });
    expect(isTransition('READY', 'UNLOADING')).toBe(true);
    expect(isTransition('UNLOADING', 'READY')).toBe(false);
  });

  it('a listener that throws does not keep the others from hearing the event', () => {
    const errors: unknown[] = [];
    const events = new LifecycleEvents((e) => errors.push(e));
    const seen: string[] = [];
    events.on(() => {
      throw new Error('listener bug');
    });
    events.on((e) => seen.push(e.state));
    events.emit({ model: 'm', version: 2, state: 'UNAVAILABLE', reason: 'unloaded' });
    expect(seen).toEqual(['UNAVAILABLE']);
    expect(errors).toHaveLength(1);
  });
});

import { newInferenceRequest } from '@nereid/protocol';
import { LazyAbort } from './lazy-abort';

describe('LazyAbort', () => {
  it('gives the request a signal that aborts with the call', () => {
    const lazy = new LazyAbort();
    const request = newInferenceRequest('m', -1);
    lazy.attach(request);
    const signal = request.signal!;
    expect(signal.aborted).toBe(false);
    expect(request.signal).toBe(signal);
    lazy.abort();
    expect(signal.aborted).toBe(true);
  });

  it('is already aborted when first read after a cancel', () => {
    const lazy = new LazyAbort();
    lazy.abort();
    expect(lazy.signal.aborted).toBe(true);
  });
});

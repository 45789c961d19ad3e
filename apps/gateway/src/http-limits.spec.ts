import { DEFAULT_HTTP_LIMITS, serverOptionsFor } from './http-limits';

describe('serverOptionsFor', () => {
  it('turns the default limits into Node timeouts checked every second', () => {
    expect(serverOptionsFor({ ...DEFAULT_HTTP_LIMITS })).toEqual({ requestTimeout: 60_000, headersTimeout: 30_000, connectionsCheckingInterval: 1000 });
  });

  it('keeps the header timeout within the request timeout, as Node requires', () => {
    expect(serverOptionsFor({ requestTimeoutSecs: 10, headerTimeoutSecs: 30 })).toMatchObject({ requestTimeout: 10_000, headersTimeout: 10_000 });
    expect(serverOptionsFor({ requestTimeoutSecs: 10, headerTimeoutSecs: 0 })).toMatchObject({ requestTimeout: 10_000, headersTimeout: 10_000 });
  });

  it('checks short timeouts often, and no timeouts at Node\'s own period', () => {
    expect(serverOptionsFor({ requestTimeoutSecs: 1, headerTimeoutSecs: 1 }).connectionsCheckingInterval).toBe(250);
    expect(serverOptionsFor({ requestTimeoutSecs: 0, headerTimeoutSecs: 0 })).toEqual({ requestTimeout: 0, headersTimeout: 0, connectionsCheckingInterval: 30_000 });
    expect(serverOptionsFor({ requestTimeoutSecs: 0, headerTimeoutSecs: 5 })).toMatchObject({ requestTimeout: 0, headersTimeout: 5000 });
  });
});

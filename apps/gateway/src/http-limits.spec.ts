import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { bodyWaitMs, connectionCap, DEFAULT_HTTP_LIMITS, openFileLimit, serverOptionsFor } from './http-limits';

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

describe('connection and body bounds', () => {
  it('reads the soft open-file limit of a limits file as Linux writes it', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'limits-')), 'limits');
    writeFileSync(file, 'Limit                     Soft Limit           Hard Limit           Units     \nMax open files            1024                 4096                 files     \n');
    expect(openFileLimit(file)).toBe(1024);
    expect(openFileLimit(path.join(file, 'missing'))).toBeUndefined();
    if (process.platform === 'linux') expect(openFileLimit()).toBeGreaterThan(0);
  });

  it('keeps --http-max-connections within three quarters of the open-file limit', () => {
    expect(connectionCap(4096, 1024)).toBe(768);
    expect(connectionCap(4096, 20000)).toBe(4096);
    expect(connectionCap(4096, undefined)).toBe(4096);
    // 0 is "no limit", as the flag says.
    expect(connectionCap(0, 1024)).toBe(0);
  });

  it('lets a body wait for room half the request timeout, at most 30 s', () => {
    expect(bodyWaitMs({ requestTimeoutSecs: 2 })).toBe(1000);
    expect(bodyWaitMs({ requestTimeoutSecs: 600 })).toBe(30_000);
    expect(bodyWaitMs({ requestTimeoutSecs: 0 })).toBe(30_000);
  });
});

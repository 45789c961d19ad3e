import { capMessage, echo, ECHO_LIMIT, MESSAGE_LIMIT } from './echo';
import { InferenceError, toInferenceError } from './errors';

/** Length of the message as grpc-js puts it in the `grpc-message` trailer. */
const wireLength = (s: string): number => encodeURI(s).length;

describe('echo: client text in an error message', () => {
  it('keeps short text as it is', () => {
    expect(echo('INPUT0')).toBe('INPUT0');
    expect(echo(42)).toBe('42');
  });

  it(`clips text to ${ECHO_LIMIT} characters and an ellipsis`, () => {
    const e = echo('x'.repeat(1024 * 1024));
    expect(e).toBe('x'.repeat(ECHO_LIMIT) + '...');
  });

  it('never splits a surrogate pair, and replaces lone surrogates', () => {
    const e = echo('a'.repeat(ECHO_LIMIT - 1) + '😀😀');
    expect(e).toBe('a'.repeat(ECHO_LIMIT - 1) + '...');
    expect(echo('a\uD800b\uDC00')).toBe('a\uFFFDb\uFFFD');
    expect(() => encodeURI(echo('\uD800'))).not.toThrow();
  });
});

describe('capMessage: the whole message', () => {
  it('keeps messages within the limit unchanged', () => {
    const m = 'unexpected shape for input ' + 'y'.repeat(2000);
    expect(wireLength(m)).toBeLessThanOrEqual(MESSAGE_LIMIT);
    expect(capMessage(m)).toBe(m);
  });

  it.each([
    ['ASCII', 'z'],
    ['spaces (percent-encoded)', ' '],
    ['two-byte characters', 'é'],
    ['three-byte characters', '€'],
    ['four-byte characters', '😀'],
  ])('cuts %s to the limit once percent-encoded, ending in "..."', (_kind, unit) => {
    const m = unit.repeat(1024 * 1024);
    const capped = capMessage(m);
    expect(capped.endsWith('...')).toBe(true);
    expect(wireLength(capped)).toBeLessThanOrEqual(MESSAGE_LIMIT);
    expect(wireLength(capped)).toBeGreaterThan(MESSAGE_LIMIT - 16);
  });

  it('is applied to every InferenceError, foreign errors included', () => {
    const big = 'q'.repeat(1024 * 1024);
    expect(wireLength(InferenceError.invalidArg(big).message)).toBeLessThanOrEqual(MESSAGE_LIMIT);
    expect(wireLength(toInferenceError(new Error(big)).message)).toBeLessThanOrEqual(MESSAGE_LIMIT);
  });
});

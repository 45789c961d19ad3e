import { holdsUnsafeInteger, JsonNumber, mayHoldFractionOrExponent, parseJsonText } from './json-text';

const lenient = (text: string): unknown => parseJsonText(text, { keepLiterals: false });
const literal = (text: string): unknown => parseJsonText(text, { keepLiterals: true });

describe('parseJsonText', () => {
  it('parses what JSON.parse parses, to the same values', () => {
    const texts = [
      '{"a":[1,-2,3.5,1e3,-0,true,false,null],"b":{"c":"x\\"y\\\\z\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00"}}',
      ' [ ] ',
      '{}',
      '"\u2028 plain \u00e9"',
      '[[[[]]]]',
      '{"__proto__":{"x":1}}',
    ];
    for (const t of texts) expect(lenient(t)).toEqual(JSON.parse(t));
    expect(Object.keys(lenient('{"__proto__":1}') as object)).toEqual(['__proto__']);
  });

  it('refuses what JSON.parse refuses', () => {
    for (const t of ['', '[1,]', '{"a":1,}', '[01]', '[1.]', '[.5]', '["a\nb"]', '["\\x"]', '["\\u12"]', "{'a':1}", '[1] x', '[-]', '{"a" 1}', 'nul', '[Nan]', '[Infinit]']) {
      expect(() => JSON.parse(t)).toThrow();
      expect(() => lenient(t)).toThrow(SyntaxError);
    }
  });

  it('reads NaN, Inf and Infinity as Triton does', () => {
    expect(lenient('[NaN, -NaN, Inf, -Inf, Infinity, -Infinity]')).toEqual([NaN, NaN, Infinity, -Infinity, Infinity, -Infinity]);
  });

  it('keeps literals that are not plain safe integers', () => {
    const [a, b, c, d, e, f] = literal('[12, -123456789012345, 1234567890123456, 1e-400, -0.0, NaN]') as unknown[];
    expect(a).toBe(12);
    expect(b).toBe(-123456789012345);
    expect(c).toEqual(new JsonNumber('1234567890123456', 1234567890123456));
    expect((c as JsonNumber).isIntegerLiteral()).toBe(true);
    expect(d).toEqual(new JsonNumber('1e-400', 0));
    expect((d as JsonNumber).isIntegerLiteral()).toBe(false);
    expect((e as JsonNumber).text).toBe('-0.0');
    expect((f as JsonNumber).text).toBe('NaN');
  });

  it('refuses nesting deeper than 1000 levels instead of overflowing the stack', () => {
    expect(() => lenient('['.repeat(100000))).toThrow(/nesting deeper than 1000 levels/);
    expect(lenient(`${'['.repeat(1000)}${']'.repeat(1000)}`)).toBeInstanceOf(Array);
  });
});

describe('mayHoldFractionOrExponent and holdsUnsafeInteger', () => {
  it('tell when JSON.parse may not have read a number literal exactly', () => {
    expect(mayHoldFractionOrExponent('{"name":"e","data":[1,-2,1234567890123456789],"shape":[3]}')).toBe(false);
    expect(mayHoldFractionOrExponent('[1e-400]')).toBe(true);
    expect(mayHoldFractionOrExponent('[5.0]')).toBe(true);
    expect(mayHoldFractionOrExponent('[1E2]')).toBe(true);
    expect(mayHoldFractionOrExponent('["v1.2"]')).toBe(true); // a string: a false alarm, never a miss
    expect(holdsUnsafeInteger(JSON.parse('[1, [2, 9007199254740991]]'))).toBe(false);
    expect(holdsUnsafeInteger(JSON.parse('[1, [2, 9007199254740993]]'))).toBe(true);
    expect(holdsUnsafeInteger(JSON.parse('[-9007199254740992]'))).toBe(true);
  });
});

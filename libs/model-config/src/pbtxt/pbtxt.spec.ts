import { InferenceError } from '@nereid/protocol';
import { parseModelConfig } from './parser';
import { printModelConfig, quotePbtxtString } from './printer';

function messageOf(text: string): string {
  try {
    parseModelConfig(text, '/models/m/config.pbtxt');
  } catch (e) {
    expect(e).toBeInstanceOf(InferenceError);
    expect((e as InferenceError).code).toBe('INVALID_ARG');
    return (e as InferenceError).message;
  }
  throw new Error('expected a parse error');
}

describe('pbtxt parser', () => {
  it('prefixes errors with Triton text and the file, line and column', () => {
    expect(messageOf('name: "m"\n  max_batch_size 8\n')).toBe(
      'failed to read text proto from /models/m/config.pbtxt: 2:18: Expected ":", found "8".',
    );
  });

  it('accepts every boolean spelling', () => {
    const words = ['true', 'True', 't', '1', '0x1', 'false', 'False', 'f', '0'];
    const parsed = words.map((w) => parseModelConfig(`response_cache { enable: ${w} }`, 'c').response_cache?.enable);
    expect(parsed).toEqual([true, true, true, true, true, false, false, false, false]);
    expect(messageOf('response_cache { enable: 2 }')).toMatch(/1:26: Invalid value for boolean field "enable". Value: "2".$/);
  });

  it('reads integers in every base and checks ranges per type', () => {
    const c = parseModelConfig('input { dims: [ 0x7fffffffffffffff, -9223372036854775808, 017, 0 ] }', 'c');
    expect(c.input?.[0].dims).toEqual([Number(2n ** 63n - 1n), -Number(2n ** 63n), 15, 0]);
    expect(messageOf('input { dims: 9223372036854775808 }')).toMatch(/1:15: Integer out of range \(9223372036854775808\).$/);
    expect(messageOf('max_batch_size: -2147483649')).toMatch(/1:17: Integer out of range \(-2147483649\).$/);
    expect(parseModelConfig('max_batch_size: -2147483648', 'c').max_batch_size).toBe(-2147483648);
  });

  it('reports lexical errors at the offending character', () => {
    expect(messageOf('name: "\\x"')).toMatch(/1:8: Invalid escape sequence in string literal.$/);
    expect(messageOf('name: "\\u12"')).toMatch(/1:8: Invalid escape sequence in string literal.$/);
    expect(messageOf('max_batch_size: 0x')).toMatch(/1:17: "0x" must be followed by hex digits.$/);
    expect(messageOf('max_batch_size: 1e')).toMatch(/1:17: "e" must be followed by exponent.$/);
  });

  it('requires list items to be separated by commas', () => {
    expect(messageOf('input { dims: [ 1 2 ] }')).toMatch(/1:19: Expected "]", found "2".$/);
  });
});

describe('pbtxt printer', () => {
  it('prints canonical text in declaration order', () => {
    const text = printModelConfig({
      max_batch_size: 8,
      name: 'simple',
      input: [{ name: 'INPUT0', data_type: 'TYPE_INT32', dims: [16] }],
      dynamic_batching: {},
      parameters: { K: { string_value: 'v' } },
      metric_tags: {},
    });
    expect(text).toBe(
      [
        'name: "simple"',
        'max_batch_size: 8',
        'input {',
        '  name: "INPUT0"',
        '  data_type: TYPE_INT32',
        '  dims: [16]',
        '}',
        'dynamic_batching { }',
        'metric_tags: []',
        'parameters {',
        '  key: "K"',
        '  value {',
        '    string_value: "v"',
        '  }',
        '}',
        '',
      ].join('\n'),
    );
  });

  it('escapes quotes, backslashes and control characters', () => {
    expect(quotePbtxtString('a"b\\c\nd\te\u0001é')).toBe('"a\\"b\\\\c\\nd\\te\\001é"');
  });

  it('prints 64-bit values held as doubles so that they parse back (found by the coverage-guided fuzzer)', () => {
    // 9223372036854775807 is held as 2^63, which String() prints as 9223372036854776000: out of range.
    const text = [
      'input { dims: [9223372036854775807, -9223372036854775808, 1234567890123456789] }',
      'sequence_batching { max_sequence_idle_microseconds: 18446744073709551615 }',
      'max_batch_size: 2147483647',
    ].join('\n');
    const config = parseModelConfig(text, 'c');
    const printed = printModelConfig(config);
    expect(printed).toContain('dims: [9223372036854775807, -9223372036854775808, 1234567890123456768]');
    expect(printed).toContain('max_sequence_idle_microseconds: 18446744073709551615');
    expect(parseModelConfig(printed, 'c')).toEqual(config);
  });

  it('prints nothing for an empty config', () => {
    expect(printModelConfig({})).toBe('');
    expect(parseModelConfig('', 'c')).toEqual({});
  });
});

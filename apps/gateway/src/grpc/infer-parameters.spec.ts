import { decodeRequestParameters, encodeParameter, encodeParameters } from './infer-parameters';
import type { WireParameters } from './wire-types';

const invalid = (message: string) => expect.objectContaining({ code: 'INVALID_ARG', message });

describe('decodeRequestParameters', () => {
  it('takes keys named like Object.prototype members as custom parameters', () => {
    const keys = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'];
    const params: WireParameters = {};
    for (const k of keys) Object.defineProperty(params, k, { value: { string_param: k, parameter_choice: 'string_param' }, enumerable: true });
    const { values } = decodeRequestParameters(params);
    expect(Object.getPrototypeOf(values)).toBe(Object.prototype);
    expect(Object.keys(values)).toEqual(keys);
    for (const k of keys) expect(Object.getOwnPropertyDescriptor(values, k)?.value).toBe(k);
  });

  it('is empty for no parameters', () => {
    expect(decodeRequestParameters({})).toEqual({ values: {}, enableEmptyFinalResponse: false });
  });

  it('turns reserved and custom parameters into plain values', () => {
    const params: WireParameters = {
      sequence_id: { int64_param: '9223372036854775807', parameter_choice: 'int64_param' },
      sequence_start: { bool_param: true, parameter_choice: 'bool_param' },
      priority: { uint64_param: '2', parameter_choice: 'uint64_param' },
      timeout: { int64_param: '5000', parameter_choice: 'int64_param' },
      binary_data_output: { bool_param: true, parameter_choice: 'bool_param' },
      triton_enable_empty_final_response: { bool_param: true, parameter_choice: 'bool_param' },
      a: { string_param: 'x', parameter_choice: 'string_param' },
      b: { int64_param: '7', parameter_choice: 'int64_param' },
      c: { double_param: 0.5, parameter_choice: 'double_param' },
      d: { bool_param: false, parameter_choice: 'bool_param' },
      big: { int64_param: '9007199254740993', parameter_choice: 'int64_param' },
      unset: {},
    };
    expect(decodeRequestParameters(params)).toEqual({
      values: {
        sequence_id: 9223372036854775807n,
        sequence_start: true,
        priority: 2,
        timeout: 5000,
        a: 'x',
        b: 7,
        c: 0.5,
        d: false,
        big: 9007199254740993n,
      },
      enableEmptyFinalResponse: true,
    });
  });

  it('accepts a string sequence id and a negative int64 as its uint64 value', () => {
    const seq = (p: WireParameters['x']) => decodeRequestParameters({ sequence_id: p }).values.sequence_id;
    expect(seq({ string_param: 'abc', parameter_choice: 'string_param' })).toBe('abc');
    expect(seq({ int64_param: '-1', parameter_choice: 'int64_param' })).toBe(18446744073709551615n);
  });

  it('rejects a wrong value type for a reserved key', () => {
    expect(() =>
      decodeRequestParameters({ sequence_start: { int64_param: '1', parameter_choice: 'int64_param' } }),
    ).toThrow(invalid("invalid value type for 'sequence_start' parameter, expected bool_param."));
    expect(() =>
      decodeRequestParameters({ sequence_id: { uint64_param: '1', parameter_choice: 'uint64_param' } }),
    ).toThrow(invalid("invalid value type for 'sequence_id' parameter, expected int64_param or string_param."));
    expect(() => decodeRequestParameters({ timeout: { string_param: '1', parameter_choice: 'string_param' } })).toThrow(
      invalid("invalid value type for 'timeout' parameter, expected int64_param."),
    );
    expect(() => decodeRequestParameters({ sequence_end: {} })).toThrow(
      invalid("invalid value type for 'sequence_end' parameter, expected bool_param."),
    );
  });

  it('rejects uint64 custom parameters', () => {
    expect(() => decodeRequestParameters({ u: { uint64_param: '1', parameter_choice: 'uint64_param' } })).toThrow(
      invalid("invalid value type for 'u' parameter, expected int64_param, bool_param, or string_param."),
    );
  });
});

describe('encodeParameter', () => {
  it('chooses the oneof member by value', () => {
    expect(encodeParameter(true)).toEqual({ bool_param: true });
    expect(encodeParameter('s')).toEqual({ string_param: 's' });
    expect(encodeParameter(3)).toEqual({ int64_param: 3 });
    expect(encodeParameter(0.25)).toEqual({ double_param: 0.25 });
    expect(encodeParameter(5n)).toEqual({ int64_param: '5' });
    expect(encodeParameter(18446744073709551615n)).toEqual({ uint64_param: '18446744073709551615' });
  });
  it('returns undefined for no parameters', () => {
    expect(encodeParameters(undefined)).toBeUndefined();
    expect(encodeParameters({})).toBeUndefined();
    expect(encodeParameters({ a: 1 })).toEqual({ a: { int64_param: 1 } });
  });
});

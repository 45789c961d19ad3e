import type { DataType } from './datatype';
import { decodeJsonData, encodeJsonDataText, halfBitsToNumbers } from './json-codec';
import { JsonNumber, parseJsonText } from './json-text';
import type { Tensor, TensorData } from './tensor';
import { errorOf } from '../../../test/helpers/inference-error';

const decode = (dt: DataType, shape: number[], data: unknown) => decodeJsonData(dt, shape, data, 'IN', 'm');
const tensor = (datatype: DataType, shape: number[], data: TensorData): Tensor => ({ name: 'OUT', datatype, shape, data });
/** encodeJsonDataText read back (NaN/Infinity literals included). */
const encodeJsonData = (t: Tensor): unknown => parseJsonText(encodeJsonDataText(t), { keepLiterals: false });
/** The `data` array of a JSON text with every number kept as written (see json-text.ts). */
const literally = (text: string): unknown => (parseJsonText(`{"data":${text}}`, { keepLiterals: true }) as { data: unknown }).data;

describe('decodeJsonData', () => {
  const cases: [DataType, unknown[], TensorData][] = [
    ['BOOL', [true, false, true], new Uint8Array([1, 0, 1])],
    ['UINT8', [0, 255, 7], new Uint8Array([0, 255, 7])],
    ['UINT16', [0, 65535, 7], new Uint16Array([0, 65535, 7])],
    ['UINT32', [0, 4294967295, 7], new Uint32Array([0, 4294967295, 7])],
    ['UINT64', [0, 2 ** 53, 7], new BigUint64Array([0n, 2n ** 53n, 7n])],
    ['INT8', [-128, 127, 0], new Int8Array([-128, 127, 0])],
    ['INT16', [-32768, 32767, 0], new Int16Array([-32768, 32767, 0])],
    ['INT32', [-2147483648, 2147483647, 0], new Int32Array([-2147483648, 2147483647, 0])],
    ['INT64', [-(2 ** 53), 2 ** 53, -1], new BigInt64Array([-(2n ** 53n), 2n ** 53n, -1n])],
    ['FP32', [1.5, -0.25, 1e30], new Float32Array([1.5, -0.25, 1e30])],
    ['FP64', [1.5, -0.1, 1e300], new Float64Array([1.5, -0.1, 1e300])],
  ];

  it.each(cases)('decodes and re-encodes %s', (dt, json, typed) => {
    const data = decode(dt, [3], json);
    expect(data).toEqual(typed);
    expect(data.constructor).toBe(typed.constructor);
    const back = encodeJsonData(tensor(dt, [3], data));
    expect(back).toEqual(dt === 'FP32' ? Array.from(new Float32Array(json as number[])) : json);
  });

  it('decodes BYTES strings as UTF-8 and encodes them back', () => {
    const data = decode('BYTES', [3], ['abc', '', 'héllo ☃']) as Uint8Array[];
    expect(data.map((b) => Buffer.from(b).toString('hex'))).toEqual([
      '616263', '', Buffer.from('héllo ☃', 'utf8').toString('hex'),
    ]);
    expect(data[0]).toBeInstanceOf(Uint8Array);
    expect(encodeJsonData(tensor('BYTES', [3], data))).toEqual(['abc', '', 'héllo ☃']);
  });

  it('decodes BYTES as views of one buffer, empty strings as one shared element (issue 16: 6 MB of "" grew the server by 718 MiB)', () => {
    const data = decodeJsonData('BYTES', [5], ['ab', '', 'é€', '', 'z'], 'IN', 'm') as Uint8Array[];
    expect(data.map((e) => Buffer.from(e).toString())).toEqual(['ab', '', 'é€', '', 'z']);
    expect(data[0].buffer).toBe(data[2].buffer);
    expect(data[2].buffer).toBe(data[4].buffer);
    expect(data[0].buffer.byteLength).toBe(2 + 5 + 1);
    expect(data[1]).toBe(data[3]);
    const empties = decodeJsonData('BYTES', [1_000_000], new Array<string>(1_000_000).fill(''), 'IN', 'm') as Uint8Array[];
    expect(new Set(empties).size).toBe(1);
  });

  it('accepts INT64/UINT64 extremes given as bigints', () => {
    const min = -(2n ** 63n);
    const max = 2n ** 63n - 1n;
    expect(decode('INT64', [2], [min, max])).toEqual(new BigInt64Array([min, max]));
    expect(decode('UINT64', [2], [0n, 2n ** 64n - 1n])).toEqual(new BigUint64Array([0n, 2n ** 64n - 1n]));
    expect(decode('INT8', [1], [-128n])).toEqual(new Int8Array([-128]));
  });

  it('accepts nested arrays in row-major order', () => {
    expect(decode('INT32', [2, 3], [[1, 2, 3], [4, 5, 6]])).toEqual(new Int32Array([1, 2, 3, 4, 5, 6]));
    expect(decode('FP32', [2, 1, 2], [[[1, 2]], [[3, 4]]])).toEqual(new Float32Array([1, 2, 3, 4]));
    expect(decode('BOOL', [2, 2], [[true, false], [false, true]])).toEqual(new Uint8Array([1, 0, 0, 1]));
    // Mixed nesting is flattened as well.
    expect(decode('INT32', [3], [[1], 2, [3]])).toEqual(new Int32Array([1, 2, 3]));
    expect(decode('INT32', [2], [[1], 2])).toEqual(new Int32Array([1, 2]));
  });

  it('accepts zero-element shapes', () => {
    expect(decode('FP32', [0], [])).toEqual(new Float32Array(0));
    expect(decode('INT32', [2, 0], [[], []])).toEqual(new Int32Array(0));
    expect(decode('BYTES', [0, 4], [])).toEqual([]);
  });

  it('accepts 99 levels of nesting and rejects 100, as Triton', () => {
    let ok: unknown = [1];
    for (let i = 1; i < 99; i++) ok = [ok];
    expect(decode('INT32', [1], ok)).toEqual(new Int32Array([1]));
    const e = errorOf(() => decode('INT32', [1], [ok]));
    expect(e.code).toBe('INVALID_ARG');
    expect(e.message).toBe("Unable to parse 'data': JSON nesting depth exceeds maximum allowed limit (100)");
  });

  it('rejects FP16 and BF16 with Triton wording', () => {
    expect(errorOf(() => decode('FP16', [1], [1])).message).toBe(
      'receiving FP16 data via JSON is not supported. Please use the binary data format for input IN',
    );
    expect(errorOf(() => decode('BF16', [1], [1])).message).toBe(
      'receiving BF16 data via JSON is not supported. Please use the binary data format for input IN',
    );
  });

  it('rejects a wrong element count with expected and got', () => {
    const e = errorOf(() => decode('INT32', [2, 3], [1, 2, 3, 4, 5]));
    expect(e.code).toBe('INVALID_ARG');
    expect(e.message).toBe(
      "Unable to parse 'data' for input 'IN' for model 'm': unexpected number of elements, expected 6 for shape [2,3], got 5",
    );
    expect(errorOf(() => decode('INT32', [2, 3], [[1, 2, 3], [4, 5, 6], [7]])).message).toContain('expected 6 for shape [2,3], got 7');
    expect(errorOf(() => decode('BYTES', [0], ['a'])).message).toContain('expected 0 for shape [0], got 1');
  });

  it('rejects data that is not an array', () => {
    expect(errorOf(() => decode('INT32', [1], 5)).message).toBe(
      "Unable to parse 'data' for input 'IN' for model 'm': 'data' must be an array, got 5",
    );
    expect(errorOf(() => decode('INT32', [1], { a: 1 })).message).toContain("'data' must be an array, got {\"a\":1}");
  });

  const bad: [DataType, unknown, string][] = [
    ['BOOL', 1, 'a boolean (true or false) for datatype BOOL, got 1'],
    ['BOOL', 'true', 'a boolean (true or false) for datatype BOOL, got "true"'],
    ['UINT8', 256, 'an integer in [0, 255] for datatype UINT8, got 256'],
    ['UINT8', -1, 'an integer in [0, 255] for datatype UINT8, got -1'],
    ['UINT8', 1.5, 'an integer in [0, 255] for datatype UINT8, got 1.5'],
    ['UINT16', 65536, 'an integer in [0, 65535] for datatype UINT16, got 65536'],
    ['UINT32', 4294967296, 'an integer in [0, 4294967295] for datatype UINT32, got 4294967296'],
    ['UINT64', -1, 'an integer in [0, 18446744073709551615] for datatype UINT64, got -1'],
    ['UINT64', 2 ** 64, 'an integer in [0, 18446744073709551615] for datatype UINT64, got 18446744073709552000'],
    ['UINT64', 2n ** 64n, 'for datatype UINT64, got 18446744073709551616'],
    ['INT8', 128, 'an integer in [-128, 127] for datatype INT8, got 128'],
    ['INT8', 300n, 'an integer in [-128, 127] for datatype INT8, got 300'],
    ['INT16', -32769, 'an integer in [-32768, 32767] for datatype INT16, got -32769'],
    ['INT32', 2147483648, 'an integer in [-2147483648, 2147483647] for datatype INT32, got 2147483648'],
    ['INT32', '1', 'an integer in [-2147483648, 2147483647] for datatype INT32, got "1"'],
    ['INT32', null, 'for datatype INT32, got null'],
    ['INT64', 2 ** 63, 'an integer in [-9223372036854775808, 9223372036854775807] for datatype INT64, got 9223372036854776000'],
    ['INT64', 0.5, 'for datatype INT64, got 0.5'],
    ['INT64', true, 'for datatype INT64, got true'],
    ['FP32', 'x', 'a number for datatype FP32, got "x"'],
    ['FP64', null, 'a number for datatype FP64, got null'],
    ['BYTES', 5, 'a string for datatype BYTES, got 5'],
    ['BYTES', { s: 'a' }, 'a string for datatype BYTES, got {"s":"a"}'],
  ];

  it.each(bad)('rejects a bad %s element %p', (dt, value, text) => {
    const e = errorOf(() => decode(dt, [2], [dt === 'BOOL' ? true : dt === 'BYTES' ? 'ok' : 0, value]));
    expect(e.code).toBe('INVALID_ARG');
    // A value of the wrong JSON kind gets the words of Triton's JSON reader first.
    expect(e.message).toMatch(/^Unable to parse 'data' for input 'IN' for model 'm': (attempt to access JSON [a-z-]+ as [a-z-]+: )?element 1 must be /);
    expect(e.message).toContain(text);
  });

  it.each([
    ['INT32', '1e-400', 'attempt to access JSON non-signed-integer as signed-integer: element 0 must be an integer in [-2147483648, 2147483647] for datatype INT32, got 1e-400'],
    ['INT8', '5.0', 'attempt to access JSON non-signed-integer as signed-integer: element 0 must be an integer in [-128, 127] for datatype INT8, got 5.0'],
    ['UINT8', '1E2', 'attempt to access JSON non-unsigned-integer as unsigned-integer: element 0 must be an integer in [0, 255] for datatype UINT8, got 1E2'],
    ['INT64', '-0.0', 'attempt to access JSON non-signed-integer as signed-integer: element 0 must be an integer in'],
    ['UINT64', '1e19', 'attempt to access JSON non-unsigned-integer as unsigned-integer: element 0'],
    ['INT16', 'NaN', 'attempt to access JSON non-signed-integer as signed-integer: element 0 must be an integer in [-32768, 32767] for datatype INT16, got NaN'],
  ])('refuses the non-integer literal of %s %s as Triton does (issue 11, defect 17)', (dt, literal, text) => {
    const e = errorOf(() => decode(dt as DataType, [1], literally(`[${literal}]`)));
    expect(e.code).toBe('INVALID_ARG');
    expect(e.message.startsWith(`Unable to parse 'data' for input 'IN' for model 'm': ${text}`)).toBe(true);
  });

  it('reads integer literals beyond 2^53 exactly', () => {
    const data = literally('[9007199254740993, -9223372036854775808, 9223372036854775807, 12]');
    expect(decode('INT64', [4], data)).toEqual(
      new BigInt64Array([9007199254740993n, -(2n ** 63n), 2n ** 63n - 1n, 12n]),
    );
    expect(decode('UINT64', [2], literally('[18446744073709551615, 9007199254740993]'))).toEqual(
      new BigUint64Array([2n ** 64n - 1n, 9007199254740993n]),
    );
    expect(errorOf(() => decode('INT64', [1], literally('[9223372036854775808]'))).message).toContain(
      'element 0 must be an integer in [-9223372036854775808, 9223372036854775807] for datatype INT64, got 9223372036854775808',
    );
    expect(errorOf(() => decode('INT32', [1], literally('[2147483648000000000]'))).message).toContain('got 2147483648000000000');
  });

  it('reads float literals, NaN and infinities for FP32/FP64', () => {
    const data = decode('FP64', [5], literally('[1e-400, -0.0, NaN, -Infinity, 2.5]')) as Float64Array;
    expect(Array.from(data)).toEqual([0, -0, NaN, -Infinity, 2.5]);
    expect(Object.is(data[1], -0)).toBe(true);
  });

  it('refuses a JSON string with an unpaired surrogate for BYTES (it has no UTF-8 form)', () => {
    const e = errorOf(() => decode('BYTES', [2], ['ok', 'a\ud800']));
    expect(e.code).toBe('INVALID_ARG');
    expect(e.message).toContain("Unable to parse 'data' for input 'IN' for model 'm': element 1 holds an unpaired UTF-16 surrogate");
    expect(decode('BYTES', [1], ['\ud83d\ude00'])).toEqual([new Uint8Array([0xf0, 0x9f, 0x98, 0x80])]);
  });

  it('reports the flat index of a bad element inside nested data', () => {
    expect(errorOf(() => decode('INT8', [2, 2], [[1, 2], [3, 999]])).message).toContain('element 3 must be');
  });

  it('truncates long values in messages', () => {
    const msg = errorOf(() => decode('INT32', [1], ['x'.repeat(100)])).message;
    expect(msg).toContain(`got "${'x'.repeat(36)}...`);
  });

  it('decodes a large flat array quickly', () => {
    const n = 1_000_000;
    const json = Array.from({ length: n }, (_, i) => i * 0.5);
    const t0 = performance.now();
    const data = decode('FP32', [n], json) as Float32Array;
    const ms = performance.now() - t0;
    expect(data[n - 1]).toBe((n - 1) * 0.5);
    expect(ms).toBeLessThan(2000); // generous: guards against per-element allocation, not a benchmark
  });
});

describe('encodeJsonDataText', () => {
  it('writes BOOL as booleans and 64-bit integers exactly', () => {
    expect(encodeJsonDataText(tensor('BOOL', [3], new Uint8Array([1, 0, 2])))).toBe('[true,false,true]');
    expect(encodeJsonDataText(tensor('INT64', [3], new BigInt64Array([-(2n ** 63n), 5n, 2n ** 53n + 1n])))).toBe(
      '[-9223372036854775808,5,9007199254740993]',
    );
    expect(encodeJsonDataText(tensor('UINT64', [1], new BigUint64Array([2n ** 64n - 1n])))).toBe('[18446744073709551615]');
    expect(encodeJsonDataText(tensor('UINT8', [2], new Uint8Array([0, 255])))).toBe('[0,255]');
  });

  it('writes -0, NaN and infinities as Triton does (-0.0, NaN, Infinity, -Infinity)', () => {
    expect(encodeJsonDataText(tensor('FP32', [5], new Float32Array([-0, NaN, Infinity, -Infinity, 1.5])))).toBe(
      '[-0.0,NaN,Infinity,-Infinity,1.5]',
    );
    expect(encodeJsonDataText(tensor('FP64', [3], new Float64Array([5e-324, 1e21, -0.1])))).toBe('[5e-324,1e+21,-0.1]');
    const back = literally(encodeJsonDataText(tensor('FP64', [2], new Float64Array([-0, NaN])))) as JsonNumber[];
    expect(back.map((n) => n.text)).toEqual(['-0.0', 'NaN']);
  });

  it('writes BYTES that are UTF-8 as strings (NUL included) and refuses the others', () => {
    const bytes = [new Uint8Array([0x61, 0x00, 0x62]), new Uint8Array([0xc3, 0xa9])];
    expect(encodeJsonDataText(tensor('BYTES', [2], bytes))).toBe('["a\\u0000b","é"]');
    const e = errorOf(() => encodeJsonDataText(tensor('BYTES', [2], [bytes[0], new Uint8Array([0xff, 0xfe])])));
    expect(e.code).toBe('INVALID_ARG');
    expect(e.message).toBe(
      "sending BYTES data that is not valid UTF-8 via JSON is not supported (element 1 of output 'OUT'). Please use the binary data format for output",
    );
  });

  it('writes FP32 as the exact double value of each float', () => {
    expect(encodeJsonData(tensor('FP32', [1], new Float32Array([0.1])))).toEqual([0.10000000149011612]);
  });

  it('writes empty tensors as empty arrays', () => {
    expect(encodeJsonData(tensor('INT32', [0, 3], new Int32Array(0)))).toEqual([]);
    expect(encodeJsonData(tensor('BYTES', [0], []))).toEqual([]);
  });

  it('rejects FP16 and BF16 like Triton', () => {
    expect(errorOf(() => encodeJsonDataText(tensor('FP16', [1], new Uint16Array([0x3c00])))).message).toBe(
      'sending FP16 data via JSON is not supported. Please use the binary data format for output',
    );
    expect(errorOf(() => encodeJsonDataText(tensor('BF16', [1], new Uint16Array([0x3f80])))).message).toBe(
      'sending BF16 data via JSON is not supported. Please use the binary data format for output',
    );
  });

  it('offers a numeric view of half-precision bits', () => {
    expect(halfBitsToNumbers('FP16', new Uint16Array([0x3c00, 0x7c00]))).toEqual([1, Infinity]);
    expect(halfBitsToNumbers('BF16', new Uint16Array([0xbf80]))).toEqual([-1]);
  });
});

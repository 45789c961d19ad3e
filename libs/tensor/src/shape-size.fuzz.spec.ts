import fc from 'fast-check';
import { fuzz, fuzzParams, hostileShapeArb } from '../../../test/helpers/fuzz';
import { tensorDataFromBytes } from './binary-codec';
import { DATATYPES, ELEMENT_SIZE } from './datatype';
import { InferenceError } from './errors';
import { tensorDataFromContents } from './grpc-contents';
import { decodeJsonData } from './json-codec';
import { checkedElementCount } from './tensor';

const words = (shape: number[]): string =>
  `the shape [${shape.join(',')}] of input 'x' for model 'm' has a byte size beyond 9007199254740991 bytes`;

describe('shape arithmetic checked before anything is sized from it (issue 16)', () => {
  it('counts exactly up to 2^53 - 1 bytes, and refuses beyond in clear words', () => {
    expect(checkedElementCount([1, 16], 4, 'x', 'm')).toBe(16);
    expect(checkedElementCount([], 4, 'x', 'm')).toBe(1);
    expect(checkedElementCount([2 ** 53 - 1], 1, 'x', 'm')).toBe(2 ** 53 - 1);
    // An empty tensor holds nothing whatever its other (exact) dimensions.
    expect(checkedElementCount([2 ** 32, 2 ** 32, 0], 8, 'x', 'm')).toBe(0);
    expect(() => checkedElementCount([0, 2 ** 62], 1, 'x', 'm')).toThrow(words([0, 2 ** 62]));
    for (const shape of [[2 ** 31, 2 ** 31, 2 ** 31], [1, 2 ** 53], [2 ** 53 - 1, 2], [1, 9223372036854775807], [1, 1e300]]) {
      expect(() => checkedElementCount(shape, 1, 'x', 'm')).toThrow(words(shape));
    }
    // The element size counts: 2^51 FP64 elements are 2^54 bytes.
    expect(() => checkedElementCount([2 ** 51], 8, 'x', 'm')).toThrow(words([2 ** 51]));
    expect(checkedElementCount([2 ** 51], 2, 'x', 'm')).toBe(2 ** 51);
  });

  it('refuses an overflowing shape in every decoder before reading the data', () => {
    const shape = [2 ** 31, 2 ** 31, 2 ** 31];
    const error = InferenceError.invalidArg(words(shape));
    expect(() => tensorDataFromBytes('FP32', shape, new Uint8Array(8), 'x', 'm')).toThrow(error.message);
    expect(() => tensorDataFromBytes('BYTES', shape, new Uint8Array(8), 'x', 'm')).toThrow(error.message);
    expect(() => decodeJsonData('INT32', shape, [1, 2], 'x', 'm')).toThrow(error.message);
    expect(() => tensorDataFromContents('INT32', shape, { int_contents: [1, 2] }, 'x', 'm')).toThrow(error.message);
  });

  it('gives every hostile shape an exact count or an InferenceError (fuzz)', () => {
    fuzz(
      fc.property(fc.constantFrom(...DATATYPES), hostileShapeArb, (datatype, shape) => {
        const size = ELEMENT_SIZE[datatype] || 4;
        let exact = 1n;
        for (const d of shape) exact *= BigInt(d);
        // A dimension beyond 2^53 - 1 is refused even beside a 0 (it cannot be read exactly).
        const fits = shape.every(Number.isSafeInteger) && exact * BigInt(size) <= BigInt(Number.MAX_SAFE_INTEGER);
        if (fits) expect(BigInt(checkedElementCount(shape, size, 'x', 'm'))).toBe(exact);
        else expect(() => checkedElementCount(shape, size, 'x', 'm')).toThrow(InferenceError);
      }),
      fuzzParams(),
    );
  });
});

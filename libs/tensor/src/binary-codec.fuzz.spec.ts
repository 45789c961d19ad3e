import fc from 'fast-check';
import { fuzz, fuzzParams, hostileShapeArb, onlyThrows, rawTensorArb } from '../../../test/helpers/fuzz';
import { serializeBytesElements, tensorDataFromBytes, tensorDataToBytes } from './binary-codec';
import { DATATYPES, ELEMENT_SIZE } from './datatype';
import { InferenceError } from './errors';
import { elementCount } from './tensor';
import { bytesView, isBytesData } from './typed';

describe('binary tensor codec (fuzz)', () => {
  it('round-trips every valid tensor of every datatype: decode then encode gives the same bytes', () => {
    fuzz(
      fc.property(rawTensorArb(), ({ datatype, shape, raw }) => {
        const data = tensorDataFromBytes(datatype, shape, raw, 'x', 'm');
        const back = tensorDataToBytes({ name: 'x', datatype, shape, data });
        expect(Buffer.from(back)).toEqual(Buffer.from(raw));
      }),
      fuzzParams(),
    );
  });

  it('round-trips BYTES elements: serialize then decode gives the elements', () => {
    fuzz(
      fc.property(fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 20 }), (elements) => {
        const data = tensorDataFromBytes('BYTES', [elements.length], serializeBytesElements(elements), 'x', 'm');
        expect((data as Uint8Array[]).map((e) => Buffer.from(e))).toEqual(elements.map((e) => Buffer.from(e)));
      }),
      fuzzParams(),
    );
  });

  it('refuses arbitrary bytes and shapes only with InferenceError, never claiming more elements than the bytes hold', () => {
    fuzz(
      fc.property(fc.constantFrom(...DATATYPES), hostileShapeArb, fc.uint8Array({ maxLength: 64 }), (datatype, shape, raw) => {
        const data = onlyThrows(InferenceError, () => tensorDataFromBytes(datatype, shape, raw, 'x', 'm'));
        if (data === undefined) return;
        const count = elementCount(shape);
        if (isBytesData(data)) {
          expect(data.length).toBe(count);
          expect(4 * count).toBeLessThanOrEqual(raw.byteLength);
        } else {
          expect(data.length).toBe(count);
          expect(bytesView(data).byteLength).toBe(count * ELEMENT_SIZE[datatype]);
          expect(bytesView(data).byteLength).toBe(raw.byteLength);
        }
      }),
      fuzzParams(),
    );
  });
});

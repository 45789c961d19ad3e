import fc from 'fast-check';
import { fuzz, fuzzParams, hostileShapeArb, onlyThrows, rawTensorArb } from '../../../test/helpers/fuzz';
import { tensorDataFromBytes } from './binary-codec';
import { DATATYPES } from './datatype';
import { InferenceError } from './errors';
import { decodeJsonData, encodeJsonData, MAX_JSON_DATA_DEPTH } from './json-codec';
import { elementCount } from './tensor';
import { isBytesData } from './typed';

const JSON_TYPES = DATATYPES.filter((d) => d !== 'FP16' && d !== 'BF16');

function nested(depth: number, leaf: unknown): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

describe('JSON tensor codec (fuzz)', () => {
  it('round-trips every tensor that encodes as plain JSON values', () => {
    fuzz(
      fc.property(rawTensorArb(JSON_TYPES, fc.string({ maxLength: 8 }).map((s) => new Uint8Array(Buffer.from(s)))), ({ datatype, shape, raw }) => {
        const data = tensorDataFromBytes(datatype, shape, raw, 'x', 'm');
        const json = encodeJsonData({ name: 'x', datatype, shape, data });
        if (typeof json === 'string') return; // NaN, ±Infinity, -0, 64-bit beyond 2^53: JSON text, round-tripped in infer-codec.fuzz.spec.ts
        const back = decodeJsonData(datatype, shape, json, 'x', 'm');
        if (isBytesData(data)) expect((back as Uint8Array[]).map((e) => Buffer.from(e))).toEqual(data.map((e) => Buffer.from(e)));
        else expect(back).toEqual(data);
      }),
      fuzzParams(),
    );
  });

  it('refuses arbitrary values and shapes only with InferenceError, never more elements than the shape allows', () => {
    fuzz(
      fc.property(fc.constantFrom(...DATATYPES), hostileShapeArb, fc.jsonValue({ maxDepth: 4 }), (datatype, shape, data) => {
        const out = onlyThrows(InferenceError, () => decodeJsonData(datatype, shape, data, 'x', 'm'));
        if (out !== undefined) expect(out.length).toBe(elementCount(shape));
      }),
      fuzzParams(),
    );
  });

  it('refuses nesting deeper than the limit only with InferenceError', () => {
    fuzz(
      fc.property(fc.constantFrom(...JSON_TYPES), fc.integer({ min: MAX_JSON_DATA_DEPTH - 2, max: 50_000 }), (datatype, depth) => {
        onlyThrows(InferenceError, () => decodeJsonData(datatype, [1], nested(depth, 1), 'x', 'm'));
      }),
      fuzzParams(50),
    );
  });
});

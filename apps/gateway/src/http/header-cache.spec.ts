import type { InferenceResponse } from '@nereid/protocol';
import { HeaderCache } from './header-cache';
import { decodeInferRequest } from './infer-codec';
import { errorOf } from '../../../../test/helpers/inference-error';

/** A binary request: the JSON header, then each input's bytes. */
function body(header: object, ...tensors: ArrayBufferView[]): { body: Buffer; length: string } {
  const json = Buffer.from(JSON.stringify(header));
  return { body: Buffer.concat([json, ...tensors.map((t) => Buffer.from(t.buffer, t.byteOffset, t.byteLength))]), length: String(json.length) };
}

const HEADER = {
  id: 'r1',
  parameters: { priority: 2, custom: 'x' },
  inputs: [
    { name: 'A', datatype: 'FP32', shape: [1, 4], parameters: { binary_data_size: 16 } },
    { name: 'B', datatype: 'INT32', shape: [2], parameters: { binary_data_size: 8 } },
  ],
  outputs: [{ name: 'OUT', parameters: { binary_data: true } }, { name: 'TOP', parameters: { classification: 2 } }],
};

function decode(b: { body: Buffer; length: string }, cache?: HeaderCache) {
  return decodeInferRequest(b.body, b.length, 'm', -1, () => [], undefined, cache);
}

describe('HeaderCache: binary requests whose JSON header was decoded before', () => {
  it('builds the same request as a full decoding, over the new tensor bytes, with objects of its own', () => {
    const cache = new HeaderCache();
    const first = decode(body(HEADER, new Float32Array([1, 2, 3, 4]), new Int32Array([5, 6])), cache);
    expect(first.cached).toBeDefined();
    const again = body(HEADER, new Float32Array([7, 8, 9, 10]), new Int32Array([11, 12]));
    const hit = decode(again, cache);
    expect(hit.cached).toBe(first.cached);
    const full = decode(again);
    expect(hit.request).toEqual(full.request);
    expect(hit.form).toEqual(full.form);
    expect(Array.from(hit.request.inputs[0].data as Float32Array)).toEqual([7, 8, 9, 10]);
    expect(hit.request.priority).toBe(2);
    expect(hit.request.parameters).toEqual({ custom: 'x' });
    // Nothing shared with the first request that a scheduler could change under it.
    expect(hit.request.inputs[0].shape).not.toBe(first.request.inputs[0].shape);
    expect(hit.request.parameters).not.toBe(first.request.parameters);
    expect(hit.request.outputs![0]).not.toBe(first.request.outputs![0]);
    expect(Object.isFrozen(hit.form)).toBe(true);
  });

  it('decodes in full a header that differs in one byte, a body of another length, and pure JSON', () => {
    const cache = new HeaderCache();
    const one = decode(body(HEADER, new Float32Array(4), new Int32Array(2)), cache);
    const other = decode(body({ ...HEADER, id: 'r2' }, new Float32Array(4), new Int32Array(2)), cache);
    expect(other.cached).not.toBe(one.cached);
    expect(other.request.id).toBe('r2');
    // Same header, one trailing byte more: refused in Triton's words, as without the cache.
    const b = body(HEADER, new Float32Array(4), new Int32Array(2));
    const longer = { body: Buffer.concat([b.body, Buffer.from([0])]), length: b.length };
    expect(errorOf(() => decode(longer, cache)).message).toBe(errorOf(() => decode(longer)).message);
    const json = decode({ body: Buffer.from(JSON.stringify({ inputs: [{ name: 'A', datatype: 'INT32', shape: [1], data: [1] }] })), length: undefined! }, cache);
    expect(json.cached).toBeUndefined();
  });

  it('keeps no header with an input in the JSON, and fails a BYTES input whose content is broken on a hit too', () => {
    const cache = new HeaderCache();
    const mixed = {
      inputs: [
        { name: 'A', datatype: 'INT32', shape: [1], data: [1] },
        { name: 'B', datatype: 'INT32', shape: [1], parameters: { binary_data_size: 4 } },
      ],
    };
    expect(decode(body(mixed, new Int32Array([1])), cache).cached).toBeUndefined();
    const bytes = { inputs: [{ name: 'S', datatype: 'BYTES', shape: [1], parameters: { binary_data_size: 6 } }] };
    const good = new Uint8Array([2, 0, 0, 0, 104, 105]);
    expect(decode(body(bytes, good), cache).cached).toBeDefined();
    const broken = new Uint8Array([9, 0, 0, 0, 104, 105]);
    const hit = errorOf(() => decode(body(bytes, broken), cache));
    expect(hit.message).toBe(errorOf(() => decode(body(bytes, broken))).message);
  });

  it('keeps at most `capacity` headers, and none longer than its limit', () => {
    const cache = new HeaderCache(2, 400);
    const ids = ['a', 'b', 'c'].map((id) => decode(body({ ...HEADER, id }, new Float32Array(4), new Int32Array(2)), cache).cached);
    expect(ids.every((c) => c !== undefined)).toBe(true);
    expect(decode(body({ ...HEADER, id: 'a' }, new Float32Array(4), new Int32Array(2)), cache).cached).not.toBe(ids[0]);
    expect(decode(body({ ...HEADER, id: 'c' }, new Float32Array(4), new Int32Array(2)), cache).cached).toBe(ids[2]);
    const long = { ...HEADER, id: 'x'.repeat(500) };
    expect(decode(body(long, new Float32Array(4), new Int32Array(2)), cache).cached).toBeUndefined();
  });

  it('gives the answer header again only for the outputs it was learnt from', () => {
    const cache = new HeaderCache();
    const simple = { inputs: [HEADER.inputs[0]], outputs: [{ name: 'OUT', parameters: { binary_data: true } }] };
    const { cached } = decode(body(simple, new Float32Array(4)), cache);
    const response = (shape: number[], data: InferenceResponse['outputs'][0]['data'] = new Float32Array(shape[0] * shape[1])): InferenceResponse => ({
      id: '',
      modelName: 'm',
      modelVersion: '1',
      outputs: [{ name: 'OUT', datatype: 'FP32', shape, data }],
    });
    expect(cached!.answerFor(response([1, 4]))).toBeUndefined();
    const json = Buffer.from('{}');
    cached!.learn(response([1, 4]), json, ['content-length', '18']);
    expect(cached!.answerFor(response([1, 4]))).toEqual({ json, fields: ['content-length', '18'] });
    expect(cached!.answerFor(response([2, 2]))).toBeUndefined();
    expect(cached!.answerFor({ ...response([1, 4]), id: 'other' })).toBeUndefined();
    expect(cached!.answerFor({ ...response([1, 4]), parameters: { p: 1 } })).toBeUndefined();
    expect(cached!.answerFor({ ...response([1, 4]), modelVersion: '2' })).toBeUndefined();
    // An output the request asked for as JSON is never learnt.
    const asJson = decode(body({ inputs: [HEADER.inputs[0]], outputs: [{ name: 'OUT' }] }, new Float32Array(4)), cache).cached!;
    asJson.learn(response([1, 4]), json, []);
    expect(asJson.answerFor(response([1, 4]))).toBeUndefined();
  });
});

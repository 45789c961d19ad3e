import * as zlib from 'node:zlib';
import { InferenceError } from '@nereid/protocol';
import { decodeBody, HeaderedError, INFLATE_CHUNK } from './body';

/** `members` gzip members of `each` zero bytes: a bomb of ratio ~1000, built without inflating it here. */
function gzipBomb(each: number, members: number): Buffer {
  const member = zlib.gzipSync(Buffer.alloc(each), { level: 9 });
  return Buffer.concat(Array.from({ length: members }, () => member));
}

async function errorOf(p: Promise<unknown>): Promise<InferenceError> {
  try {
    await p;
  } catch (e) {
    return e as InferenceError;
  }
  throw new Error('expected a rejection');
}

describe('decodeBody', () => {
  const limit = 1024 * 1024;

  it('inflates gzip and deflate bodies, and passes identity through', async () => {
    const data = Buffer.from('{"inputs":[]}'.repeat(1000));
    expect(await decodeBody(zlib.gzipSync(data), 'gzip', limit)).toEqual(data);
    expect(await decodeBody(zlib.deflateSync(data), ' Deflate ', limit)).toEqual(data);
    expect(await decodeBody(data, 'identity', limit)).toBe(data);
    expect(await decodeBody(data, undefined, limit)).toBe(data);
  });

  it('accepts a body that inflates to exactly the limit, and concatenated gzip members', async () => {
    const exact = await decodeBody(gzipBomb(limit / 4, 4), 'gzip', limit);
    expect(exact.length).toBe(limit);
  });

  it('stops a gzip bomb as soon as the output passes the limit, in Triton words', async () => {
    const bomb = gzipBomb(16 * 1024 * 1024, 4); // 64 MiB inflated from ~64 KiB
    // The chunks kept: the one that passes the limit is dropped, not handed on.
    let kept = 0;
    const error = await errorOf(decodeBody(bomb, 'gzip', limit, (n) => void (kept += n)));
    expect(error).toBeInstanceOf(InferenceError);
    expect(error.message).toBe(
      `Decompressed data size exceeds the maximum allowed value of ${limit} bytes. Use --http-max-input-size to increase the limit.`,
    );
    expect(kept).toBeGreaterThan(limit - INFLATE_CHUNK);
    expect(kept).toBeLessThanOrEqual(limit);
  });

  it('stops inflating at the first chunk its observer refuses, with the observer\'s error', async () => {
    const bomb = gzipBomb(16 * 1024 * 1024, 4);
    let kept = 0;
    const refusal = InferenceError.unavailable('no room');
    const error = await errorOf(decodeBody(bomb, 'gzip', limit, (n) => (kept + n > 3 * INFLATE_CHUNK ? refusal : void (kept += n))));
    expect(error).toBe(refusal);
    expect(kept).toBeLessThanOrEqual(3 * INFLATE_CHUNK);
  });

  it('bounds 64 concurrent bombs to the limit each', async () => {
    const bomb = zlib.deflateSync(Buffer.alloc(8 * 1024 * 1024), { level: 9 });
    const peaks = new Array<number>(64).fill(0);
    const errors = await Promise.all(peaks.map((_, i) => errorOf(decodeBody(bomb, 'deflate', limit, (n) => void (peaks[i] += n)))));
    for (const e of errors) expect(e.message).toMatch(/^Decompressed data size exceeds the maximum allowed value/);
    for (const p of peaks) expect(p).toBeLessThanOrEqual(limit);
  });

  it('answers a corrupt body as an invalid argument and an unknown encoding as unsupported', async () => {
    const corrupt = await errorOf(decodeBody(Buffer.from('not gzip at all'), 'gzip', limit));
    expect(corrupt.message).toMatch(/^failed to decompress the request body \(gzip\): /);
    const truncated = await errorOf(decodeBody(zlib.gzipSync(Buffer.alloc(10000, 7)).subarray(0, 20), 'gzip', limit));
    expect(truncated.message).toMatch(/^failed to decompress the request body \(gzip\): /);
    const unknown = await errorOf(decodeBody(Buffer.from('x'), 'br', limit));
    expect(unknown).toBeInstanceOf(HeaderedError);
    expect((unknown as HeaderedError).headers).toEqual({ 'Accept-Encoding': 'gzip, deflate' });
  });
});

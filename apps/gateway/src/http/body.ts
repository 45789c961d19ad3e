import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { HttpRequestErrors, InferenceError } from '@nereid/protocol';

const gzip = promisify(zlib.gzip);
const deflate = promisify(zlib.deflate);

/** An error carrying extra response headers (e.g. Accept-Encoding for 501 on compression). */
export class HeaderedError extends InferenceError {
  constructor(
    error: InferenceError,
    readonly headers: Record<string, string>,
  ) {
    super(error.code, error.message);
  }
}

/** Output chunk of the inflater: the most a body can be inflated past the limit before it is refused. */
export const INFLATE_CHUNK = 64 * 1024;

/**
 * Decompresses a request body per Content-Encoding (gzip, deflate, identity). Inflation stops at
 * the first chunk that takes the output past `maxSize` (a small bomb is refused after at most
 * `maxSize + INFLATE_CHUNK` bytes, and what was inflated is dropped at once). `onChunk` sees the
 * size of each inflated chunk before it is kept, and may refuse it (an error ends the inflation).
 */
export async function decodeBody(
  body: Buffer,
  encoding: string | undefined,
  maxSize: number,
  onChunk?: OnInflated,
): Promise<Buffer> {
  const enc = (encoding ?? '').trim().toLowerCase();
  if (!enc || enc === 'identity') return body;
  if (enc !== 'gzip' && enc !== 'deflate') {
    throw new HeaderedError(InferenceError.unsupported('Unsupported compression type'), { 'Accept-Encoding': 'gzip, deflate' });
  }
  return inflateBounded(body, enc, maxSize, onChunk);
}

/** Sees each inflated chunk's size; an error refuses it. */
export type OnInflated = (bytes: number) => InferenceError | undefined;

function inflateBounded(body: Buffer, enc: 'gzip' | 'deflate', maxSize: number, onChunk?: OnInflated): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const options = { chunkSize: INFLATE_CHUNK };
    const inflater = enc === 'gzip' ? zlib.createGunzip(options) : zlib.createInflate(options);
    let chunks: Buffer[] = [];
    let total = 0;
    let done = false;
    const finish = (error: InferenceError | undefined): void => {
      if (done) return;
      done = true;
      const parts = chunks;
      chunks = [];
      if (error) {
        inflater.destroy();
        reject(error);
      } else {
        resolve(parts.length === 1 ? parts[0] : Buffer.concat(parts, total));
      }
    };
    inflater.on('data', (chunk: Buffer) => {
      if (done) return;
      total += chunk.length;
      if (total > maxSize) return finish(HttpRequestErrors.decompressedTooLarge(maxSize));
      const refused = onChunk?.(chunk.length);
      if (refused) return finish(refused);
      chunks.push(chunk);
    });
    inflater.on('error', (e: Error) => finish(InferenceError.invalidArg(`failed to decompress the request body (${enc}): ${e.message}`)));
    inflater.on('end', () => finish(undefined));
    inflater.end(body);
  });
}

/** The response encoding the client accepts, if any of gzip/deflate. */
export function pickEncoding(acceptEncoding: string | undefined): 'gzip' | 'deflate' | undefined {
  if (!acceptEncoding) return undefined;
  for (const part of acceptEncoding.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (params.some((p) => /^\s*q=0(\.0*)?\s*$/.test(p))) continue;
    if (name === 'gzip' || name === 'deflate') return name;
  }
  return undefined;
}

export function compress(body: Buffer, encoding: 'gzip' | 'deflate'): Promise<Buffer> {
  return encoding === 'gzip' ? gzip(body) : deflate(body);
}

/** Optional JSON body of control endpoints (empty body → undefined). */
export function parseJsonBody(body: unknown): Record<string, unknown> | undefined {
  if (body === undefined || body === null) return undefined;
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(String(body));
  if (buf.length === 0 || buf.toString('utf8').trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(buf.toString('utf8'));
  } catch (e) {
    throw HttpRequestErrors.jsonParse((e as Error).message);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw InferenceError.invalidArg('the request body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

/** `/versions/<v>` segment: digits only, as Triton's router. Anything else is not a route. */
export function parseVersion(v: string | undefined): number {
  if (v === undefined || v === '') return -1;
  if (!/^[0-9]+$/.test(v)) throw InferenceError.notFound('Not Found');
  return Number(v);
}

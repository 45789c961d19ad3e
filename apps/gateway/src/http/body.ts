import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { HttpRequestErrors, InferenceError } from '@nereid/protocol';

const inflate = promisify(zlib.inflate);
const gunzip = promisify(zlib.gunzip);
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

/** Decompresses a request body per Content-Encoding (gzip, deflate, identity). */
export async function decodeBody(body: Buffer, encoding: string | undefined, maxSize: number): Promise<Buffer> {
  const enc = (encoding ?? '').trim().toLowerCase();
  if (!enc || enc === 'identity') return body;
  const opts = { maxOutputLength: maxSize };
  try {
    if (enc === 'gzip') return await gunzip(body, opts);
    if (enc === 'deflate') return await inflate(body, opts);
  } catch (e) {
    const msg = (e as Error).message;
    if (/exceeds|maxOutputLength|Cannot create a Buffer/i.test(msg)) {
      throw HttpRequestErrors.decompressedTooLarge(maxSize);
    }
    throw InferenceError.invalidArg(`failed to decompress the request body (${enc}): ${msg}`);
  }
  throw new HeaderedError(InferenceError.unsupported('Unsupported compression type'), { 'Accept-Encoding': 'gzip, deflate' });
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

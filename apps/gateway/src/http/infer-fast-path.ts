import type { IncomingMessage, ServerResponse } from 'node:http';
import type { InferenceCore } from '@nereid/core';
import { InferenceError, toInferenceError, type InferenceResponse } from '@nereid/protocol';
import { compress, decodeBody, HeaderedError, pickEncoding } from './body';
import { describe } from './http-error.filter';
import { LazyAbort } from '../grpc/lazy-abort';
import { decodeInferRequest, encodeInferResponse, type RawInputInfo } from './infer-codec';

/** `/v2/models/<m>[/versions/<v>]/infer` → [model, version]; undefined for any other path. */
export function matchInferPath(url: string): [string, number] | undefined {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (!path.startsWith('/v2/models/') || !path.endsWith('/infer')) return undefined;
  const parts = path.slice('/v2/models/'.length, -'/infer'.length).split('/');
  let model: string;
  try {
    model = decodeURIComponent(parts[0]);
  } catch {
    return undefined;
  }
  if (parts.length === 1 && model) return [model, -1];
  if (parts.length === 3 && parts[1] === 'versions' && /^[0-9]+$/.test(parts[2]) && model) return [model, Number(parts[2])];
  return undefined;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function tooLarge(limit: number, size?: number): InferenceError {
  return InferenceError.invalidArg(
    `Request body size${size !== undefined ? ` of ${size} bytes` : ''} exceeds the maximum allowed value of ${limit} bytes. Use --http-max-input-size to increase the limit.`,
  );
}

/**
 * Reads the whole body. When the length is declared, the bytes land in one buffer placed so that
 * the binary section (after `Inference-Header-Content-Length` bytes of JSON) starts 8-byte
 * aligned: the first tensor can then be used in place instead of being copied again.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? -1);
    if (declared > limit) {
      reject(tooLarge(limit, declared));
      req.resume();
      return;
    }
    const jsonLength = Number(req.headers['inference-header-content-length'] ?? 0);
    const compressed = req.headers['content-encoding'] !== undefined && req.headers['content-encoding'] !== 'identity';
    if (declared > 0 && !compressed) {
      const pad = Number.isInteger(jsonLength) && jsonLength > 0 ? (8 - (jsonLength % 8)) % 8 : 0;
      const target = Buffer.from(new ArrayBuffer(declared + pad), pad, declared);
      let at = 0;
      req.on('data', (c: Buffer) => {
        if (at + c.length > declared) {
          reject(InferenceError.invalidArg('request body is longer than its Content-Length'));
          req.removeAllListeners('data');
          req.resume();
          return;
        }
        target.set(c, at);
        at += c.length;
      });
      req.once('end', () => resolve(at === declared ? target : target.subarray(0, at)));
      req.once('error', reject);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(tooLarge(limit));
        req.removeAllListeners('data');
        req.resume();
        return;
      }
      chunks.push(c);
    });
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
    req.once('error', reject);
  });
}

/**
 * The inference endpoint without a framework pipeline: it reads the body, decodes it with the same
 * codec, calls the same core and encodes the response. Every other route stays on Nest. Measured in
 * bench/http-infer: the Nest + Fastify route pipeline (middie hooks, content-type parser) cost more
 * per request than the whole inference of a small model.
 */
export class InferFastPath {
  constructor(
    private readonly core: InferenceCore,
    private readonly maxInputSize: number,
  ) {}

  private rawInput(model: string, version: number): RawInputInfo | undefined {
    const md = this.core.modelMetadata(model, version);
    return md.inputs.length === 1 ? md.inputs[0] : undefined;
  }

  /** Answers one inference request; never throws (errors become Triton's error JSON). */
  handle(req: IncomingMessage, res: ServerResponse, model: string, version: number): void {
    // Plain callbacks rather than an async function: every await is a microtask hop, and on a small
    // model those hops were a measurable share of the request (bench/http-infer).
    readBody(req, this.maxInputSize).then(
      (raw) => {
        const encoding = req.headers['content-encoding'];
        if (encoding === undefined || encoding === 'identity') return this.infer(req, res, raw, model, version);
        decodeBody(raw, encoding, this.maxInputSize).then(
          (body) => this.infer(req, res, body, model, version),
          (e: unknown) => fail(res, e),
        );
      },
      (e: unknown) => fail(res, e),
    );
  }

  private infer(req: IncomingMessage, res: ServerResponse, body: Buffer, model: string, version: number): void {
    try {
      if (this.core.isDecoupled(model, version)) {
        throw InferenceError.unsupported("HTTP end point doesn't support models with decoupled transaction policy");
      }
      const header = req.headers['inference-header-content-length'] as string | undefined;
      const { request, form } = decodeInferRequest(body, header, model, version, () => this.rawInput(model, version));
      // A client that goes away before the answer cancels its request.
      const abort = new LazyAbort();
      abort.attach(request);
      res.once('close', () => {
        if (!res.writableEnded) abort.abort();
      });
      // The observer form of the core (inferOne would add a promise and a microtask per request).
      let last: InferenceResponse | undefined;
      this.core.infer(request, {
        onResponse: (response, final) => {
          if (response) last = response;
          if (!final) return;
          if (last) respond(req, res, encodeInferResponse(last, form));
          else fail(res, InferenceError.internal(`model '${model}' sent no response`));
        },
        onError: (e) => fail(res, e),
      });
    } catch (e) {
      fail(res, e);
    }
  }
}

function respond(req: IncomingMessage, res: ServerResponse, encoded: ReturnType<typeof encodeInferResponse>): void {
  const encoding = pickEncoding(req.headers['accept-encoding']);
  if (!encoding) return writeParts(res, encoded.parts, encoded.headerLength);
  compress(Buffer.concat(encoded.parts), encoding).then(
    (body) => writeParts(res, [body], encoded.headerLength, encoding),
    (e: unknown) => fail(res, e),
  );
}

/** Writes the JSON header and each binary output as they are: no concatenation copy. */
function writeParts(res: ServerResponse, parts: Uint8Array[], headerLength: number | undefined, encoding?: string): void {
  let length = 0;
  for (const p of parts) length += p.byteLength;
  const headers: Record<string, string | number> =
    headerLength !== undefined
      ? { 'content-type': 'application/octet-stream', 'inference-header-content-length': headerLength, 'content-length': length }
      : { 'content-type': 'application/json', 'content-length': length };
  if (encoding) headers['content-encoding'] = encoding;
  res.writeHead(200, headers);
  for (let i = 0; i < parts.length - 1; i++) res.write(parts[i]);
  res.end(parts[parts.length - 1]);
}

function fail(res: ServerResponse, e: unknown): void {
  const err = e instanceof HeaderedError ? e : toInferenceError(e);
  const { status, message } = describe(err);
  if (!res.headersSent) sendJson(res, status, { error: message }, err instanceof HeaderedError ? err.headers : {});
}

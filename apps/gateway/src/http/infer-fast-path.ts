import type { IncomingMessage, ServerResponse } from 'node:http';
import type { InferenceCore } from '@nereid/core';
import { InferenceError, toInferenceError } from '@nereid/protocol';
import { compress, decodeBody, HeaderedError, pickEncoding } from './body';
import { describe } from './http-error.filter';
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

  async handle(req: IncomingMessage, res: ServerResponse, model: string, version: number): Promise<void> {
    try {
      const raw = await readBody(req, this.maxInputSize);
      const body = await decodeBody(raw, req.headers['content-encoding'], this.maxInputSize);
      if (this.core.isDecoupled(model, version)) {
        throw InferenceError.unsupported("HTTP end point doesn't support models with decoupled transaction policy");
      }
      const header = req.headers['inference-header-content-length'] as string | undefined;
      const { request, form } = decodeInferRequest(body, header, model, version, () => this.rawInput(model, version));
      const response = await this.inferWithCancel(request, req, res);
      const encoded = encodeInferResponse(response, form);
      const headers: Record<string, string | number> = {};
      const encoding = pickEncoding(req.headers['accept-encoding']);
      let parts = encoded.parts;
      if (encoding) {
        parts = [await compress(Buffer.concat(parts), encoding)];
        headers['content-encoding'] = encoding;
      }
      if (encoded.headerLength !== undefined) {
        headers['content-type'] = 'application/octet-stream';
        headers['inference-header-content-length'] = encoded.headerLength;
      } else {
        headers['content-type'] = 'application/json';
      }
      let length = 0;
      for (const p of parts) length += p.byteLength;
      headers['content-length'] = length;
      res.writeHead(200, headers);
      // The JSON header and each binary output are written as they are: no concatenation copy.
      for (let i = 0; i < parts.length - 1; i++) res.write(parts[i]);
      res.end(parts[parts.length - 1]);
    } catch (e) {
      const err = e instanceof HeaderedError ? e : toInferenceError(e);
      const { status, message } = describe(err);
      if (!res.headersSent) sendJson(res, status, { error: message }, err instanceof HeaderedError ? err.headers : {});
    }
  }

  /** A client that goes away before the answer cancels its request. */
  private inferWithCancel(
    request: Parameters<InferenceCore['inferOne']>[0],
    req: IncomingMessage,
    res: ServerResponse,
  ): ReturnType<InferenceCore['inferOne']> {
    let controller: AbortController | undefined;
    const onClose = (): void => {
      if (!res.writableEnded) {
        controller ??= new AbortController();
        controller.abort();
      }
    };
    Object.defineProperty(request, 'signal', {
      configurable: true,
      enumerable: false,
      get: () => (controller ??= new AbortController()).signal,
    });
    res.once('close', onClose);
    return this.core.inferOne(request).finally(() => res.off('close', onClose));
  }
}

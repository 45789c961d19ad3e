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

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? -1);
    if (declared > limit) {
      reject(InferenceError.invalidArg(`Request body size of ${declared} bytes exceeds the maximum allowed value of ${limit} bytes. Use --http-max-input-size to increase the limit.`));
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(InferenceError.invalidArg(`Request body size exceeds the maximum allowed value of ${limit} bytes. Use --http-max-input-size to increase the limit.`));
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
      let out = encoded.body;
      const headers: Record<string, string | number> = {};
      const encoding = pickEncoding(req.headers['accept-encoding']);
      if (encoding) {
        out = await compress(out, encoding);
        headers['content-encoding'] = encoding;
      }
      if (encoded.headerLength !== undefined) {
        headers['content-type'] = 'application/octet-stream';
        headers['inference-header-content-length'] = encoded.headerLength;
      } else {
        headers['content-type'] = 'application/json';
      }
      headers['content-length'] = out.length;
      res.writeHead(200, headers);
      res.end(out);
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

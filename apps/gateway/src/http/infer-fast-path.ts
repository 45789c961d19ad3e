import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { BufferPool, type InferenceCore, type SystemSharedMemory } from '@nereid/core';
import { HttpRequestErrors, InferenceError, toInferenceError, type InferenceResponse } from '@nereid/protocol';
import { isReclaimable, reclaimStorage, tensorDataToBytes } from '@nereid/tensor';
import { compress, decodeBody, HeaderedError, pickEncoding } from './body';
import type { BodyBudget } from './body-budget';
import { DecodedAllowance } from './decoded-allowance';
import { HeaderCache, type CachedAnswer } from './header-cache';
import { describe } from './http-error.filter';
import { LazyAbort } from '../grpc/lazy-abort';
import {
  decodeInferRequest,
  encodeInferResponseText,
  releaseSharedMemory,
  type DecodedInfer,
  type EncodedResponseText,
  type OutputForm,
  type RawInputInfo,
} from './infer-codec';
import { httpIngress, logArrival, noteArrival } from './infer-observe';
import type { RequestLog } from '../access-log';
import { checkOutputSize, DEFAULT_MAX_OUTPUT_SIZE } from '../output-size';
import { NOSNIFF_NAME, NOSNIFF_VALUE } from './nosniff';

/** `/v2/models/<m>[/versions/<v>]/infer` → [model, version]; undefined for any other path. */
export function matchInferPath(url: string): [string, number] | undefined {
  const cached = parsedPaths.get(url);
  if (cached !== undefined) return cached;
  const parsed = parseInferPath(url);
  // Clients send the same few paths over and over: remembering them saves the split, the URI
  // decoding and a fresh model-name string (whose hash every Map lookup would compute again).
  if (parsed && parsedPaths.size < PATH_CACHE_SIZE) parsedPaths.set(url, parsed);
  return parsed;
}

const PATH_CACHE_SIZE = 1024;
const parsedPaths = new Map<string, [string, number]>();

function parseInferPath(url: string): [string, number] | undefined {
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
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), [NOSNIFF_NAME]: NOSNIFF_VALUE, ...headers });
  res.end(text);
}

/**
 * A body over --http-max-input-size, in Triton's words for what it holds: a raw input, a JSON
 * request, or a JSON header and binary tensors. `size` is the declared length, or what arrived
 * until the limit was passed.
 */
function tooLarge(req: IncomingMessage, limit: number, size: number): InferenceError {
  const header = req.headers['inference-header-content-length'];
  if (header === undefined) return HttpRequestErrors.requestJsonTooLarge(size, limit);
  const jsonLength = Number(header);
  if (jsonLength === 0) return HttpRequestErrors.rawInputTooLarge(size, limit);
  if (jsonLength > limit) return HttpRequestErrors.requestJsonTooLarge(jsonLength, limit);
  return HttpRequestErrors.requestTooLarge(size, limit);
}

/** Bodies up to this size are taken as the socket delivered them (usually one chunk, no copy). */
const SMALL_BODY = 64 * 1024;

/** `pooled`: the pool buffer the body lies in, to release once nothing reads the body any more. */
type BodyCallback = (error: unknown, body?: Buffer, pooled?: Buffer) => void;

/**
 * Reads the whole body and calls `done` once. A large body with a declared length lands in one
 * buffer placed so that the binary section (after `Inference-Header-Content-Length` bytes of JSON)
 * starts 8-byte aligned: the first tensor can then be used in place instead of being copied again.
 * A small body is kept as the chunk the socket delivered (a copy of a few bytes costs less than
 * a buffer of its own per request; the codec copies a misaligned tensor).
 */
function readBody(req: IncomingMessage, res: ServerResponse, limit: number, pool: BufferPool, budget: BodyBudget | undefined, done: BodyCallback): void {
  const lengthHeader = req.headers['content-length'];
  const declared = lengthHeader === undefined ? -1 : Number(lengthHeader);
  if (declared > limit) {
    req.resume();
    done(tooLarge(req, limit, declared));
    return;
  }
  let failed = false;
  const fail = (e: unknown): void => {
    if (failed) return;
    failed = true;
    req.removeAllListeners('data');
    req.resume();
    done(e);
  };
  // `on` rather than `once` for events that end the read: `fail` and `done` run once anyway, and
  // `once` allocates a wrapper per request.
  req.on('error', fail);
  const encoding = req.headers['content-encoding'];
  const compressed = encoding !== undefined && encoding !== 'identity';
  if (declared > SMALL_BODY && !compressed) {
    const jsonLength = Number(req.headers['inference-header-content-length'] ?? 0);
    const pad = Number.isInteger(jsonLength) && jsonLength > 0 ? (8 - (jsonLength % 8)) % 8 : 0;
    // A reused buffer (see BufferPool in libs/core), not zero-filled: every byte is overwritten by the
    // body, and a shorter body is cut to what arrived.
    const whole = pool.acquire(declared + pad);
    const target = whole.subarray(pad, pad + declared);
    let at = 0;
    req.on('data', (c: Buffer) => {
      if (at + c.length > declared) return fail(InferenceError.invalidArg('request body is longer than its Content-Length'));
      target.set(c, at);
      at += c.length;
    });
    // Back to the pool at once unless the body was handed on (then the caller releases it).
    let handedOn = false;
    req.once('end', () => {
      if (failed) return;
      handedOn = true;
      done(undefined, at === declared ? target : target.subarray(0, at), whole);
    });
    req.once('close', () => {
      if (!handedOn) pool.release(whole);
    });
    return;
  }
  let first: Buffer | undefined;
  let chunks: Buffer[] | undefined;
  let size = 0;
  // A body without a declared length is charged to the budget as it arrives (a declared one was charged whole).
  const growing = declared < 0 ? budget : undefined;
  req.on('data', (c: Buffer) => {
    size += c.length;
    if (size > limit) return fail(tooLarge(req, limit, size));
    const refused = growing?.grow(res, c.length);
    if (refused) return fail(refused);
    if (first === undefined) first = c;
    else if (chunks === undefined) chunks = [first, c];
    else chunks.push(c);
  });
  req.on('end', () => {
    if (failed) return;
    done(undefined, chunks ? Buffer.concat(chunks, size) : (first ?? Buffer.alloc(0)));
  });
}

/**
 * The inference endpoint without a framework pipeline: it reads the body, decodes it with the same
 * codec, calls the same core and encodes the response. Every other route stays on Nest. Measured in
 * bench/http-infer: the Nest + Fastify route pipeline (middie hooks, content-type parser) cost more
 * per request than the whole inference of a small model.
 */
export class InferFastPath {
  private readonly bodies = new BufferPool();
  /** The JSON headers of binary requests seen lately, decoded (header-cache.ts). */
  private readonly headers = new HeaderCache();
  /**
   * BYTES elements count at their decoded size against the input limit and the body budget (issue
   * 16). One allowance serves every request: decodeInferRequest is synchronous, so it counts one
   * request at a time, charged to `decoding` (the response of the request being decoded).
   */
  private readonly allowance: DecodedAllowance;
  private decoding: ServerResponse | undefined;

  constructor(
    private readonly core: InferenceCore,
    private readonly maxInputSize: number,
    /** Client system shared memory (`--allow-client-shm`); none: every region is unknown. */
    private readonly sharedMemory?: SystemSharedMemory,
    /** The bytes of request bodies held at once (http/body-budget.ts); none: each body is bounded alone. */
    private readonly budget?: BodyBudget,
    /** Request ids on log lines, and the access log (see access-log.ts); none: no request lines. */
    private readonly requestLog?: RequestLog,
    /** `--max-output-size`: the most bytes of output data a response carries (output-size.ts). */
    private readonly maxOutputSize: number = DEFAULT_MAX_OUTPUT_SIZE,
  ) {
    const charge = budget ? (bytes: number) => budget.growDecoded(this.decoding!, bytes) : undefined;
    this.allowance = new DecodedAllowance(0, maxInputSize, charge);
  }

  private modelInputs(model: string, version: number): readonly RawInputInfo[] {
    return this.core.modelMetadata(model, version).inputs;
  }

  /** Answers one inference request; never throws (errors become Triton's error JSON). */
  handle(req: IncomingMessage, res: ServerResponse, model: string, version: number): void {
    if (this.core.tracing) noteArrival(req);
    // Plain callbacks rather than an async function: every await is a microtask hop, and on a small
    // model those hops were a measurable share of the request (bench/http-infer).
    readBody(req, res, this.maxInputSize, this.bodies, this.budget, (error, raw, pooled) => {
      if (error !== undefined) return fail(res, error);
      const encoding = req.headers['content-encoding'];
      if (encoding === undefined || encoding === 'identity') return this.infer(req, res, raw!, model, version, pooled);
      // What is inflated is charged to the budget chunk by chunk.
      const onChunk = this.budget ? (bytes: number) => this.budget!.grow(res, bytes) : undefined;
      decodeBody(raw!, encoding, this.maxInputSize, onChunk).then(
        (body) => this.infer(req, res, body, model, version),
        (e: unknown) => fail(res, e),
      );
    });
  }

  private infer(req: IncomingMessage, res: ServerResponse, body: Buffer, model: string, version: number, pooled?: Buffer): void {
    // A pooled body goes back once the model is done with the request and the answer is written
    // (a model may answer with a view of its input, e.g. an identity model).
    const settled = pooled ? onSecondCall(() => this.bodies.release(pooled)) : noop;
    if (pooled) res.once('close', settled);
    let form: OutputForm | undefined;
    try {
      if (this.core.isDecoupled(model, version)) {
        throw InferenceError.unsupported("HTTP end point doesn't support models with decoupled transaction policy");
      }
      const header = req.headers['inference-header-content-length'] as string | undefined;
      this.decoding = res;
      let decoded: DecodedInfer;
      try {
        const allowance = this.allowance.reset(body.length);
        decoded = decodeInferRequest(body, header, model, version, () => this.modelInputs(model, version), this.sharedMemory, this.headers, allowance);
      } finally {
        this.decoding = undefined;
      }
      const { request, cached } = decoded;
      form = decoded.form;
      const outputForm = form;
      if (this.core.tracing) request.ingress = httpIngress(req);
      const log = this.requestLog;
      const id = log !== undefined ? logArrival(log, res, request, model) : '';
      // A client that goes away before the answer cancels its request.
      const abort = new LazyAbort();
      abort.attach(request);
      const open = openRequestsOf(req.socket);
      open.add(abort);
      // The observer form of the core (inferOne would add a promise and a microtask per request).
      let last: InferenceResponse | undefined;
      this.core.infer(request, {
        onResponse: (response, final) => {
          if (response) last = response;
          if (!final) return;
          // Over --max-output-size: thrown back to the core (a failure, answered through onError)
          // before anything is encoded, whichever form (JSON, binary, cached header) answers.
          if (last !== undefined) checkOutputSize(last, this.maxOutputSize, outputForm.sharedMemory);
          // The answer header of an earlier request with this header, when this answer has the same outputs.
          const plain = cached !== undefined && req.headers['accept-encoding'] === undefined;
          const answer = plain && last !== undefined ? cached.answerFor(last) : undefined;
          // Encoding throws for outputs the form cannot carry (FP16 asked for as JSON, BYTES that are
          // not UTF-8): thrown back to the core, which answers through onError and counts a failure.
          const encoded = last !== undefined && answer === undefined ? encodeInferResponseText(last, outputForm) : undefined;
          open.delete(abort);
          const trace = request.trace;
          trace?.mark('HTTP_SEND_START');
          if (answer !== undefined) {
            writeAnswer(res, answer, last!);
            reclaimWhenSent(res, last!);
          } else if (encoded !== undefined) {
            respond(req, res, encoded, plain ? (json, fields) => cached.learn(last!, json, fields) : undefined);
            reclaimWhenSent(res, last!);
          } else fail(res, InferenceError.internal(`model '${model}' sent no response`));
          releaseWhenSent(res, outputForm);
          settled();
          if (trace !== undefined) {
            trace.mark('HTTP_SEND_END');
            trace.release();
          }
        },
        onError: (e) => {
          open.delete(abort);
          releaseWhenSent(res, outputForm);
          if (log?.verbose) log.request('verbose', id, `infer failed: ${e.message}`);
          const trace = request.trace;
          trace?.mark('HTTP_SEND_START');
          fail(res, e);
          settled();
          if (trace !== undefined) {
            trace.mark('HTTP_SEND_END');
            trace.release();
          }
        },
      });
    } catch (e) {
      releaseSharedMemory(form);
      fail(res, e);
      settled();
    }
  }
}

function noop(): void {}

/**
 * A request's client shared memory goes back once its response is sent: output tensors written to
 * the socket may be views of input buffers the pool would hand to the next request.
 */
function releaseWhenSent(res: ServerResponse, form: OutputForm): void {
  if (!form.sharedMemory) return;
  if (res.closed) releaseSharedMemory(form);
  else res.once('close', () => releaseSharedMemory(form));
}

/**
 * Frees the output buffers the backend handed over whole (libs/tensor/src/reclaim.ts) once the
 * answer is with the kernel: 'finish' comes after the last write completed, so no pending socket
 * write still reads them, and by then they are written to client shared memory or encoded as well.
 * Never on an answer cut off ('close' without 'finish'): there the collector frees them.
 */
function reclaimWhenSent(res: ServerResponse, response: InferenceResponse): void {
  const outputs = response.outputs;
  let any = false;
  for (let i = 0; i < outputs.length && !any; i++) any = isReclaimable(outputs[i].data);
  if (!any) return;
  res.once('finish', () => {
    for (const t of outputs) reclaimStorage(t.data);
  });
}

/** A function that runs `fn` the second time it is called. */
function onSecondCall(fn: () => void): () => void {
  let calls = 0;
  return () => {
    if (++calls === 2) fn();
  };
}

const OPEN_REQUESTS = Symbol('nereid.openRequests');

type WatchedSocket = Socket & { [OPEN_REQUESTS]?: Set<LazyAbort> };

/**
 * The requests of a connection that have no answer yet; when the connection closes first they are
 * cancelled. One close listener per connection instead of one per request (a listener added and
 * dropped per request showed in the profile of small requests).
 */
function openRequestsOf(socket: Socket): Set<LazyAbort> {
  const watched = socket as WatchedSocket;
  let open = watched[OPEN_REQUESTS];
  if (!open) {
    const set = new Set<LazyAbort>();
    open = set;
    watched[OPEN_REQUESTS] = set;
    socket.once('close', () => {
      for (const abort of set) abort.abort();
      set.clear();
    });
  }
  return open;
}

/** Sees the JSON header and header fields of an uncompressed answer with a binary section. */
type OnBinaryAnswer = (json: Buffer, fields: readonly string[]) => void;

function respond(req: IncomingMessage, res: ServerResponse, encoded: EncodedResponseText, onBinary?: OnBinaryAnswer): void {
  const accept = req.headers['accept-encoding'];
  const encoding = accept === undefined ? undefined : pickEncoding(accept);
  const binary = encoded.binary;
  // JSON only: the text goes to `end` as it is, and Node sends it in one write with the status
  // line and headers (a Buffer would be a second part of a writev).
  if (!encoding && binary.length === 0) return writeJson(res, encoded.json);
  const header = Buffer.from(encoded.json);
  const headerLength = binary.length > 0 ? header.length : undefined;
  if (!encoding) {
    const fields = writeParts(res, header, binary, headerLength);
    if (headerLength !== undefined) onBinary?.(header, fields);
    return;
  }
  compress(Buffer.concat([header, ...binary]), encoding).then(
    (body) => writeParts(res, body, NO_PARTS, headerLength, encoding),
    (e: unknown) => fail(res, e),
  );
}

/** An answer whose JSON header and header fields were cached (header-cache.ts): the outputs' bytes follow as they are. */
function writeAnswer(res: ServerResponse, answer: CachedAnswer, response: InferenceResponse): void {
  res.writeHead(200, answer.fields as string[]);
  const outputs = response.outputs;
  let last: Uint8Array | undefined;
  res.write(answer.json);
  for (let i = 0; i < outputs.length; i++) {
    const bytes = tensorDataToBytes(outputs[i]);
    if (bytes.byteLength === 0) continue;
    if (last !== undefined) res.write(last);
    last = bytes;
  }
  res.end(last);
}

const NO_PARTS: readonly Uint8Array[] = [];

function writeJson(res: ServerResponse, text: string): void {
  // The flat array form: Node walks an object's headers with for-in and hasOwnProperty.
  res.writeHead(200, ['content-type', 'application/json', 'content-length', String(Buffer.byteLength(text)), NOSNIFF_NAME, NOSNIFF_VALUE]);
  res.end(text);
}

/**
 * Writes `first` (the JSON header, or the whole compressed body) and each binary output as they
 * are: no concatenation copy. The headers go to writeHead as one flat array, in the order the
 * object form gave them; returns that array.
 */
function writeParts(res: ServerResponse, first: Uint8Array, rest: readonly Uint8Array[], headerLength: number | undefined, encoding?: string): string[] {
  let length = first.byteLength;
  for (let i = 0; i < rest.length; i++) length += rest[i].byteLength;
  const headers =
    headerLength !== undefined
      ? ['content-type', 'application/octet-stream', 'inference-header-content-length', String(headerLength), 'content-length', String(length), NOSNIFF_NAME, NOSNIFF_VALUE]
      : ['content-type', 'application/json', 'content-length', String(length), NOSNIFF_NAME, NOSNIFF_VALUE];
  if (encoding) headers.push('content-encoding', encoding);
  res.writeHead(200, headers);
  if (rest.length === 0) {
    res.end(first);
    return headers;
  }
  res.write(first);
  for (let i = 0; i < rest.length - 1; i++) res.write(rest[i]);
  res.end(rest[rest.length - 1]);
  return headers;
}

function fail(res: ServerResponse, e: unknown): void {
  const err = e instanceof HeaderedError ? e : toInferenceError(e);
  const { status, message } = describe(err);
  if (!res.headersSent) sendJson(res, status, { error: message }, err instanceof HeaderedError ? err.headers : {});
}

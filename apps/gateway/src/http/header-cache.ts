import {
  applyRequestParameters,
  newInferenceRequest,
  type InferenceRequest,
  type InferenceResponse,
  type ParameterValue,
  type RequestedOutput,
} from '@nereid/protocol';
import { isBytesData, tensorDataFromBytes, type DataType } from '@nereid/tensor';
import type { OutputForm } from './infer-codec';

/**
 * The JSON headers of binary-tensor requests seen lately, each with what decoding it gave and the
 * JSON header of the answer it got. A client that sends tensors in the binary format sends the same
 * header again and again (only the tensor bytes change), so a header byte-equal to one decoded
 * before, in a body of the same length, is decoded the same way: the request is built from the
 * plan without JSON.parse, the structure checks or the parameter walk, and an answer with the same
 * outputs (names, datatypes, shapes) reuses the answer's JSON header and HTTP header fields.
 * bench/dynamic-batching/front-door.js measures what this saves per request.
 *
 * Only headers whose inputs all lie in the binary section and that use no shared memory are kept
 * (their decoding depends on nothing but the header's bytes and the body's length); at most
 * `capacity` of them, each up to `maxHeaderBytes`, the oldest replaced first.
 */
export class HeaderCache {
  private readonly entries: CachedHeader[] = [];
  private next = 0;

  constructor(
    private readonly capacity = 32,
    private readonly maxHeaderBytes = 4096,
  ) {}

  /** The entry whose header equals the first `jsonLength` bytes of `body`, for a body of the same length. */
  find(body: Buffer, jsonLength: number): CachedHeader | undefined {
    const entries = this.entries;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i];
      if (e.bodyLength === body.length && e.key.length === jsonLength && body.compare(e.key, 0, jsonLength, 0, jsonLength) === 0) return e;
    }
    return undefined;
  }

  /** Keeps what decoding the header of `body` gave; the entry, or undefined when the header is too long to keep. */
  remember(body: Buffer, jsonLength: number, plan: HeaderPlan): CachedHeader | undefined {
    if (jsonLength > this.maxHeaderBytes) return undefined;
    // A copy: the body lies in a buffer the next request reuses.
    const entry = new CachedHeader(Buffer.from(body.subarray(0, jsonLength)), body.length, plan);
    if (this.entries.length < this.capacity) this.entries.push(entry);
    else {
      this.entries[this.next] = entry;
      this.next = (this.next + 1) % this.capacity;
    }
    return entry;
  }
}

/** One input of a plan: its bytes follow the previous input's in the binary section. */
export interface PlannedInput {
  readonly name: string;
  readonly datatype: DataType;
  readonly shape: readonly number[];
  readonly byteSize: number;
}

/** What a header decoded to, less the tensor data. */
export interface HeaderPlan {
  readonly id: string;
  /** The request parameters as the wire gave them (applied again for each request: fresh objects). */
  readonly params: Record<string, ParameterValue> | undefined;
  readonly inputs: readonly PlannedInput[];
  readonly outputs: readonly RequestedOutput[] | undefined;
  /** How the answer carries each output (no shared memory: a plan is never made for a request that uses it). */
  readonly form: OutputForm;
}

/** The answer's JSON header and HTTP header fields for a response of these outputs. */
export interface CachedAnswer {
  readonly json: Buffer;
  /** Flat writeHead fields (content length included: the outputs' sizes are fixed by their shapes). */
  readonly fields: readonly string[];
}

export class CachedHeader {
  private answer: AnswerKey | undefined;

  /** Shared by every request of this header: frozen, nobody writes to it after the decoding. */
  readonly form: OutputForm;

  constructor(
    readonly key: Buffer,
    readonly bodyLength: number,
    readonly plan: HeaderPlan,
  ) {
    this.form = Object.freeze({ ...plan.form });
  }

  /** The request the header describes, over the tensor bytes of `body` (no copy where aligned). */
  request(body: Buffer, model: string, version: number): InferenceRequest {
    const plan = this.plan;
    const request = newInferenceRequest(model, version);
    request.id = plan.id;
    if (plan.params !== undefined) applyRequestParameters(request, plan.params);
    let offset = this.key.length;
    for (let i = 0; i < plan.inputs.length; i++) {
      const input = plan.inputs[i];
      const shape = input.shape.slice();
      const data = tensorDataFromBytes(input.datatype, shape, body.subarray(offset, offset + input.byteSize), input.name, model);
      request.inputs.push({ name: input.name, datatype: input.datatype, shape, data });
      offset += input.byteSize;
    }
    if (plan.outputs !== undefined) request.outputs = plan.outputs.map((o) => ({ ...o }));
    return request;
  }

  /** The cached answer header when `response` has the outputs (and id, model, version) of the one remembered. */
  answerFor(response: InferenceResponse): CachedAnswer | undefined {
    const a = this.answer;
    if (a === undefined || response.id !== a.id || response.modelName !== a.modelName || response.modelVersion !== a.modelVersion) return undefined;
    if (response.parameters !== undefined && hasKeys(response.parameters)) return undefined;
    const outputs = response.outputs;
    if (outputs.length !== a.outputs.length) return undefined;
    for (let i = 0; i < outputs.length; i++) {
      const t = outputs[i];
      const o = a.outputs[i];
      if (t.name !== o.name || t.datatype !== o.datatype || isBytesData(t.data) || t.data.byteLength !== o.byteLength) return undefined;
      if (!sameShape(t.shape, o.shape)) return undefined;
    }
    return a.cached;
  }

  /**
   * Remembers the answer header written for `response` when it is one answerFor can give again:
   * every output in the binary section with a fixed-width datatype, no response parameters.
   */
  learn(response: InferenceResponse, json: Buffer, fields: readonly string[]): void {
    if (response.parameters !== undefined && hasKeys(response.parameters)) return;
    const outputs: AnswerKey['outputs'] = [];
    for (const t of response.outputs) {
      const binary = this.form.binary?.get(t.name) ?? this.form.defaultBinary;
      if (!binary || isBytesData(t.data)) return;
      outputs.push({ name: t.name, datatype: t.datatype, shape: t.shape.slice(), byteLength: t.data.byteLength });
    }
    this.answer = { id: response.id, modelName: response.modelName, modelVersion: response.modelVersion, outputs, cached: { json, fields } };
  }
}

interface AnswerKey {
  id: string;
  modelName: string;
  modelVersion: string;
  outputs: { name: string; datatype: string; shape: number[]; byteLength: number }[];
  cached: CachedAnswer;
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function hasKeys(o: object): boolean {
  for (const _ in o) return true;
  return false;
}

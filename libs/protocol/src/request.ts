import type { Tensor } from '@nereid/tensor';
import type { InferenceError } from './errors';

/** Values a request or response parameter may hold. */
export type ParameterValue = string | number | boolean | bigint;
export type Parameters = Record<string, ParameterValue>;

/** An output the client asked for, with its protocol-neutral options. */
export interface RequestedOutput {
  name: string;
  /** classification extension: return top-N "value:index[:label]" strings instead of the tensor. */
  classification?: number;
  /** Wire-level options (binary_data, shared memory...) kept for the front door that encodes. */
  parameters?: Parameters;
}

/** The internal inference request, the same whichever front door it came through. */
export interface InferenceRequest {
  /** Client-supplied id ('' when none). */
  id: string;
  modelName: string;
  /** Requested version; -1 = the server picks the highest READY version. */
  modelVersion: number;
  inputs: Tensor[];
  /** undefined: every output of the model. */
  outputs?: RequestedOutput[];
  /** Custom parameters passed to the model (reserved keys removed). */
  parameters: Parameters;
  /** Correlation id; 0 / '' = not in a sequence. */
  sequenceId: bigint | string;
  sequenceStart: boolean;
  sequenceEnd: boolean;
  /** 0 = model default. */
  priority: number;
  /** Timeout in microseconds; 0 = none. */
  timeoutUs: number;
  /** Set by the transport when the client goes away; backends may poll it. */
  signal?: AbortSignal;
}

export interface InferenceResponse {
  id: string;
  modelName: string;
  modelVersion: string;
  outputs: Tensor[];
  parameters?: Parameters;
}

/**
 * Where a model sends the responses to one request. A non-decoupled model sends exactly one
 * response with `final = true`; a decoupled model sends 0..n responses and then a final flag
 * (possibly with no response).
 */
export interface ResponseSink {
  send(response: InferenceResponse | undefined, final: boolean): void;
  fail(error: InferenceError): void;
}

/** One request of a batch handed to a scheduler or a model instance, with where its responses go. */
export interface ExecutionItem {
  request: InferenceRequest;
  sink: ResponseSink;
  /** When the request entered the server (performance.now() ms), for queue statistics. */
  enqueuedAt?: number;
  /** When an instance started executing it (performance.now() ms), set by the worker. */
  startedAt?: number;
}

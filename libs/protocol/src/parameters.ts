import { HttpRequestErrors, JsonAccess } from './request-errors';
import { setOwn } from './own-keys';
import type { InferenceRequest, ParameterValue, Parameters } from './request';

/** Request parameter keys with a meaning of their own (not passed to the model as custom parameters). */
export const RESERVED_PARAMETERS = new Set([
  'sequence_id',
  'sequence_start',
  'sequence_end',
  'priority',
  'timeout',
  'headers',
  'binary_data_output',
]);

// Type errors in Triton's HTTP words (gRPC checks the InferParameter member before, in its own words).

function asBool(key: string, v: ParameterValue): boolean {
  if (typeof v !== 'boolean') throw HttpRequestErrors.unableToParse(key, JsonAccess.boolean);
  return v;
}

function asUint(key: string, v: ParameterValue): number {
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) throw HttpRequestErrors.unableToParse(key, JsonAccess.unsigned);
  return n;
}

/** An unsigned integer, else a string (Triton tries both and reports the string attempt). */
function asCorrelationId(v: ParameterValue): bigint | string {
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint' && v >= 0n) return v;
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return BigInt(v);
  throw HttpRequestErrors.unableToParse('sequence_id', JsonAccess.string);
}

/**
 * Splits wire request parameters into the request's own fields (sequence, priority, timeout) and
 * the custom parameters passed to the model. Both front doors call this, so both behave alike.
 * Keys starting with `triton_` are rejected as Triton does.
 */
export function applyRequestParameters(
  request: InferenceRequest,
  params: Record<string, ParameterValue> | undefined,
): { binaryDataOutput: boolean } {
  let binaryDataOutput = false;
  if (!params) return { binaryDataOutput };
  const custom: Parameters = {};
  for (const key of Object.keys(params)) {
    const v = params[key];
    if (key.startsWith('triton_')) throw HttpRequestErrors.reservedParameter();
    switch (key) {
      case 'sequence_id':
        request.sequenceId = asCorrelationId(v);
        break;
      case 'sequence_start':
        request.sequenceStart = asBool(key, v);
        break;
      case 'sequence_end':
        request.sequenceEnd = asBool(key, v);
        break;
      case 'priority':
        request.priority = asUint(key, v);
        break;
      case 'timeout':
        request.timeoutUs = asUint(key, v);
        break;
      case 'binary_data_output':
        binaryDataOutput = asBool(key, v);
        break;
      case 'headers':
        break;
      default:
        setOwn(custom, key, v);
    }
  }
  request.parameters = custom;
  return { binaryDataOutput };
}

/** Where a request's abort signal comes from when it is built only on demand. */
export interface AbortSource {
  readonly signal: AbortSignal;
  /** Whether it was aborted, read without building the signal. */
  readonly aborted: boolean;
  /** Calls `listener` once when it is aborted (not when it already was), without building the signal. */
  listen?(listener: () => void): void;
  /** Stops calling `listener`. */
  unlisten?(listener: () => void): void;
}

/**
 * The request object the front doors build. Every instance has the same fields in the same order
 * (one hidden class, so the property loads down the pipeline stay monomorphic), and `signal` is
 * read through the prototype from an optional `abortSource`: building an AbortController costs a
 * few microseconds and almost no request is ever cancelled.
 */
class FreshRequest implements InferenceRequest {
  id = '';
  inputs: InferenceRequest['inputs'] = [];
  parameters: Parameters = {};
  sequenceId: bigint | string = 0n;
  sequenceStart = false;
  sequenceEnd = false;
  priority = 0;
  timeoutUs = 0;
  outputs: InferenceRequest['outputs'] = undefined;
  abortSource: AbortSource | undefined = undefined;
  private ownSignal: AbortSignal | undefined = undefined;

  constructor(
    public modelName: string,
    public modelVersion: number,
  ) {}

  get signal(): AbortSignal | undefined {
    return this.ownSignal ?? this.abortSource?.signal;
  }

  set signal(signal: AbortSignal | undefined) {
    this.ownSignal = signal;
  }

  /** The lazy abort source that says when the client goes away, unless a signal was set on the request itself. */
  lazySource(): AbortSource | undefined {
    return this.ownSignal === undefined ? this.abortSource : undefined;
  }

  get cancelled(): boolean {
    return this.ownSignal !== undefined ? this.ownSignal.aborted : this.abortSource?.aborted === true;
  }
}

/** A fresh request with every optional field at its default. */
export function newInferenceRequest(modelName: string, modelVersion: number): InferenceRequest {
  return new FreshRequest(modelName, modelVersion);
}

/**
 * Calls `listener` once when the client of `request` goes away (nothing when it already has, as an
 * AbortSignal's listener): through the request's lazy abort source where it has one, so that no
 * AbortSignal is built for the request; otherwise on its signal. Undo with `removeCancelListener`.
 */
export function addCancelListener(request: InferenceRequest, listener: () => void): void {
  const source = request instanceof FreshRequest ? request.lazySource() : undefined;
  if (source?.listen) source.listen(listener);
  else request.signal?.addEventListener('abort', listener, { once: true });
}

export function removeCancelListener(request: InferenceRequest, listener: () => void): void {
  const source = request instanceof FreshRequest ? request.lazySource() : undefined;
  if (source?.unlisten) source.unlisten(listener);
  else request.signal?.removeEventListener('abort', listener);
}

/** Gives `request` a signal built only when read; false when the request is not one of ours. */
export function setAbortSource(request: InferenceRequest, source: AbortSource): boolean {
  if (!(request instanceof FreshRequest)) return false;
  request.abortSource = source;
  return true;
}

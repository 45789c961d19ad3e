import { InferenceError, setOwn, type ParameterValue, type Parameters } from '@nereid/protocol';
import { GrpcRequestErrors } from '@nereid/protocol';
import type { WireInferParameter, WireLong, WireParameters } from './wire-types';

type Choice = NonNullable<WireInferParameter['parameter_choice']>;

/** Request parameters as protocol-neutral values, plus the one gRPC-only streaming option. */
export interface DecodedParameters {
  /** For `applyRequestParameters` (shared with HTTP): reserved keys and custom ones. */
  values: Record<string, ParameterValue>;
  /** Streaming + decoupled: also send an empty final response (`triton_enable_empty_final_response`). */
  enableEmptyFinalResponse: boolean;
}

/** `binary_data_output` has no meaning over gRPC (outputs are always raw). */
const IGNORED_KEYS: ReadonlySet<string> = new Set(['binary_data_output']);

/**
 * The InferParameter member each reserved key accepts over gRPC (spec grpc-protocol.md §3). A Map:
 * keys are the client's, and `constructor` or `toString` must not find Object.prototype's members.
 */
const RESERVED_CHOICES: ReadonlyMap<string, readonly Choice[]> = new Map<string, readonly Choice[]>([
  ['sequence_id', ['int64_param', 'string_param']],
  ['sequence_start', ['bool_param']],
  ['sequence_end', ['bool_param']],
  ['priority', ['int64_param', 'uint64_param']],
  ['timeout', ['int64_param']],
  ['triton_enable_empty_final_response', ['bool_param']],
]);

function wrongType(key: string, expected: string): InferenceError {
  return GrpcRequestErrors.parameterType(key, expected);
}

/** int64/uint64 wire value → number when it fits exactly, else bigint. */
export function longValue(v: WireLong | undefined): number | bigint {
  if (typeof v === 'number') return v;
  const s = v ?? '0';
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : BigInt(s);
}

/** A custom parameter's value; undefined when the parameter carries no value at all. */
export function customValue(key: string, p: WireInferParameter): ParameterValue | undefined {
  switch (p.parameter_choice) {
    case undefined:
      return undefined;
    case 'bool_param':
      return p.bool_param ?? false;
    case 'int64_param':
      return longValue(p.int64_param);
    case 'string_param':
      return p.string_param ?? '';
    case 'double_param':
      return p.double_param ?? 0;
    case 'uint64_param':
      throw GrpcRequestErrors.customParameterType(key);
    default: {
      const never: never = p.parameter_choice;
      return never;
    }
  }
}

/** A reserved key's value after checking its wire type. */
function reservedValue(key: string, p: WireInferParameter, allowed: readonly Choice[]): ParameterValue {
  const choice = p.parameter_choice;
  if (choice === undefined || !allowed.includes(choice)) throw wrongType(key, allowed.join(' or '));
  if (key === 'priority' && choice === 'int64_param' && BigInt(p.int64_param ?? 0) < 0n) throw GrpcRequestErrors.priorityValue();
  if (key === 'sequence_id' && choice === 'int64_param') {
    // Triton keeps correlation ids as uint64: a negative int64 is its two's-complement value.
    return BigInt.asUintN(64, BigInt(p.int64_param ?? 0));
  }
  return choice === 'uint64_param' ? longValue(p.uint64_param) : (customValue(key, p) as ParameterValue);
}

/**
 * Request `parameters` map → plain values. Checks the InferParameter member of Triton's reserved
 * keys (gRPC wording); their meaning is applied by `applyRequestParameters`, as for HTTP.
 */
export function decodeRequestParameters(params: WireParameters): DecodedParameters {
  const values: Record<string, ParameterValue> = {};
  let enableEmptyFinalResponse = false;
  for (const key of Object.keys(params)) {
    if (IGNORED_KEYS.has(key)) continue;
    const p = params[key];
    const allowed = RESERVED_CHOICES.get(key);
    if (key === 'triton_enable_empty_final_response') {
      enableEmptyFinalResponse = reservedValue(key, p, allowed!) === true;
    } else if (key.startsWith('triton_')) {
      throw GrpcRequestErrors.reservedParameter();
    } else if (allowed) {
      values[key] = reservedValue(key, p, allowed);
    } else {
      const v = customValue(key, p);
      if (v !== undefined) setOwn(values, key, v);
    }
  }
  return { values, enableEmptyFinalResponse };
}

const INT64_MAX = (1n << 63n) - 1n;

/** One response parameter value → its InferParameter (integers as int64, others by JS type). */
export function encodeParameter(v: ParameterValue): WireInferParameter {
  switch (typeof v) {
    case 'boolean':
      return { bool_param: v };
    case 'string':
      return { string_param: v };
    case 'bigint':
      return v > INT64_MAX ? { uint64_param: v.toString() } : { int64_param: v.toString() };
    default:
      return Number.isInteger(v) ? { int64_param: v } : { double_param: v };
  }
}

/** Response parameters → wire map; undefined when there are none. */
export function encodeParameters(params: Parameters | undefined): WireParameters | undefined {
  if (!params) return undefined;
  const keys = Object.keys(params);
  if (keys.length === 0) return undefined;
  const out: WireParameters = {};
  for (const k of keys) setOwn(out, k, encodeParameter(params[k]));
  return out;
}

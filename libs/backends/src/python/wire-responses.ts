import { InferenceError, setOwn, type ErrorCode, type InferenceResponse, type Parameters, type ParameterValue } from '@nereid/protocol';
import type { Tensor } from '@nereid/tensor';
import type { BlobBuilder } from './frames';
import { encodeTensors, type ShmSettings, type WireTensor } from './wire-tensors';

/** An error response: message and TritonError code. */
export interface WireError {
  m: string;
  c: number;
}

/**
 * A response entry (both ways): `[outputs]` or `[outputs, parameters JSON]` (parameters only when
 * not `{}`), or an error object.
 */
export type WireResponse = [outputs: WireTensor[], parameters?: string] | WireError;

/** TRITONSERVER_Error_Code values, as `pb_utils.TritonError` numbers them. */
const PY_CODES: readonly ErrorCode[] = [
  'UNKNOWN', 'INTERNAL', 'NOT_FOUND', 'INVALID_ARG', 'UNAVAILABLE', 'UNSUPPORTED', 'ALREADY_EXISTS', 'CANCELLED',
];

export function errorFromWire(err: WireError): InferenceError {
  return new InferenceError(PY_CODES[err.c] ?? 'UNKNOWN', err.m);
}

/** InferenceError code -> TritonError number (DEADLINE_EXCEEDED has none in Python: UNAVAILABLE). */
export function codeToWire(code: ErrorCode): number {
  if (code === 'DEADLINE_EXCEEDED') return 4;
  const i = PY_CODES.indexOf(code);
  return i < 0 ? 0 : i;
}

export function parseParameters(text: string | undefined): Parameters | undefined {
  if (text === undefined || text === '' || text === '{}') return undefined;
  const raw = JSON.parse(text) as Record<string, unknown>;
  const out: Parameters = {};
  for (const [k, v] of Object.entries(raw)) {
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') setOwn(out, k, v);
  }
  return out;
}

/** Parameters -> JSON text (bigints as numbers), as `request.parameters()` returns it. */
export function parametersJson(params: Parameters | undefined): string {
  if (!params || !hasOwnKeys(params)) return '{}';
  return JSON.stringify(params, bigintAsNumber);
}

function bigintAsNumber(_key: string, v: ParameterValue | Parameters): unknown {
  return typeof v === 'bigint' ? Number(v) : v;
}

/** Cheaper than Object.keys(o).length > 0 (no array), for the common empty parameters. */
function hasOwnKeys(o: object): boolean {
  for (const k in o) if (Object.prototype.hasOwnProperty.call(o, k)) return true;
  return false;
}

/** A Nereid response (or error) for the stub, e.g. a BLS answer. */
export function encodeResponse(
  response: InferenceResponse | InferenceError,
  blob: BlobBuilder,
  shm: ShmSettings,
): { r: WireResponse; pending?: Promise<unknown> } {
  if (response instanceof InferenceError) return { r: { m: response.message, c: codeToWire(response.code) } };
  const { descs, pending } = encodeTensors(response.outputs, blob, shm);
  const r: WireResponse = [descs];
  if (response.parameters && Object.keys(response.parameters).length > 0) r.push(parametersJson(response.parameters));
  return { r, pending };
}

/** Builds the Nereid response of one request from decoded outputs. */
export function makeResponse(
  requestId: string,
  modelName: string,
  modelVersion: number,
  outputs: Tensor[],
  params: string | undefined,
): InferenceResponse {
  const response: InferenceResponse = { id: requestId, modelName, modelVersion: String(modelVersion), outputs };
  const parameters = parseParameters(params);
  if (parameters) response.parameters = parameters;
  return response;
}

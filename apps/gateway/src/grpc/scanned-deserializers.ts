import type { ServiceDefinition } from '@grpc/grpc-js';
import { GrpcRequestErrors, type InferenceError } from '@nereid/protocol';
import { ScanLimitError, scanInferRequest, WireScanError, type ScanCounts } from './request-scan';
import type { WireModelInferRequest } from './wire-types';

/**
 * ModelInfer and ModelStreamInfer request deserializers that scan a message (request-scan.ts) before
 * protobufjs decodes it, so that what it decodes to stays within the largest message received
 * (issue 16): its bytes plus the decoded cost of its entries and elements must fit in
 * `maxMessageBytes` (--grpc-max-message-size, else --http-max-input-size; -1: no limit), or in
 * MIN_DECODED_LIMIT when that is more: a limit set low for the wire (1 KiB, say) bounds what its
 * messages decode to already (~256 times their bytes at most), and must not refuse an ordinary
 * request whose typed contents cost a few times its bytes decoded (`simple`: 188 bytes, ~1.1 KB).
 *
 * What a message within it costs decoded is charged to the budget of request bytes held at once
 * with its bytes, before it is decoded (message-budget.ts, `decodedCostOf`): RESOURCE_EXHAUSTED with
 * the budget's words when it does not fit. A message is scanned once for both.
 *
 * A message over it is never decoded: the deserializer hands on an empty request carrying only its
 * model name and id, which decodeInferRequest refuses with the error recorded here (INVALID_ARGUMENT
 * on a unary call; on a stream an error response for that request, the stream going on). A message
 * the scan cannot read is one protobufjs would not decode either: the deserializer throws, and the
 * call ends as grpc-js ends one whose message does not parse (INTERNAL, 'Error deserializing request').
 */

const REFUSALS = new WeakMap<object, InferenceError>();

/** The error a refused message carries (see the file's comment); undefined for any other message. */
export function refusalOf(message: unknown): InferenceError | undefined {
  return typeof message === 'object' && message !== null ? REFUSALS.get(message) : undefined;
}

/** The least decoded size a message may take: Triton's default --http-max-input-size, 64 MiB. */
const MIN_DECODED_LIMIT = 64 * 1024 * 1024;

/** The methods whose requests are ModelInferRequests. */
const INFER_METHODS = ['ModelInfer', 'ModelStreamInfer'];

/** Their paths, for the budget's interceptor (message-budget.ts). */
export const INFER_METHOD_PATHS: ReadonlySet<string> = new Set(INFER_METHODS.map((m) => `/inference.GRPCInferenceService/${m}`));

/** The decoded size a message of a call limited to `maxMessageBytes` may take (see the file's comment). */
function decodedLimit(maxMessageBytes: number): number {
  return maxMessageBytes < 0 ? Infinity : Math.max(maxMessageBytes, MIN_DECODED_LIMIT);
}

/** Each message's scan, done once: by the budget when it charges it (decodedCostOf), then by its deserializer. */
const SCANS = new WeakMap<Uint8Array, ScanCounts | ScanLimitError | WireScanError>();

function scanOnce(bytes: Buffer, limit: number): ScanCounts | ScanLimitError | WireScanError {
  let result = SCANS.get(bytes);
  if (result !== undefined) return result;
  try {
    result = scanInferRequest(bytes, limit - bytes.length);
  } catch (e) {
    if (!(e instanceof ScanLimitError) && !(e instanceof WireScanError)) throw e;
    result = e;
  }
  SCANS.set(bytes, result);
  return result;
}

/**
 * What a ModelInferRequest message about to be deserialized costs decoded beyond its bytes, for the
 * budget of request bytes held at once to charge before protobufjs decodes it (message-budget.ts);
 * 0 for one its deserializer refuses undecoded (over the limit, or not a message).
 */
export function decodedCostOf(bytes: Buffer, maxMessageBytes: number): number {
  const result = scanOnce(bytes, decodedLimit(maxMessageBytes));
  return result instanceof Error ? 0 : result.cost;
}

/** The (bounded) text of a string field the scan located. */
function textAt(bytes: Buffer, at: [number, number] | undefined): string {
  return at === undefined ? '' : bytes.toString('utf8', at[0], at[1]);
}

/** The deserializer of ModelInferRequest messages, bounded by `maxMessageBytes`. */
export function scannedDeserializer(deserialize: (bytes: Buffer) => unknown, maxMessageBytes: number): (bytes: Buffer) => unknown {
  const limit = decodedLimit(maxMessageBytes);
  return (bytes: Buffer): unknown => {
    const scanned = scanOnce(bytes, limit);
    // Not a message protobufjs would decode: thrown, grpc-js ends the call.
    if (scanned instanceof WireScanError) throw scanned;
    if (!(scanned instanceof ScanLimitError)) return deserialize(bytes);
    const { counts } = scanned;
    const refused: WireModelInferRequest = {
      model_name: textAt(bytes, counts.modelName),
      model_version: '',
      id: textAt(bytes, counts.id),
      parameters: {},
      inputs: [],
      outputs: [],
      raw_input_contents: [],
    };
    REFUSALS.set(refused, GrpcRequestErrors.decodedTooLarge(bytes.length, bytes.length + counts.cost, limit));
    return refused;
  };
}

/** A copy of `service` whose ModelInfer and ModelStreamInfer deserializers scan first (see the file's comment). */
export function scannedDeserializers(service: ServiceDefinition, maxMessageBytes: number): ServiceDefinition {
  const entries = Object.entries(service).map(([name, method]) => {
    if (!INFER_METHODS.includes(name)) return [name, method];
    return [name, { ...method, requestDeserialize: scannedDeserializer(method.requestDeserialize, maxMessageBytes) }];
  });
  return Object.fromEntries(entries) as ServiceDefinition;
}

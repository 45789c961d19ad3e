/**
 * The oracle of the gRPC request scan (apps/gateway/src/grpc/request-scan.ts) for its property test
 * and its coverage-guided fuzz target: what protobufjs decoded, counted as the scan counts it.
 */
import type { ScanCounts } from '../../apps/gateway/src/grpc/request-scan';
import type { WireModelInferRequest } from '../../apps/gateway/src/grpc/wire-types';

export type Counted = Pick<ScanCounts, 'messages' | 'bytesEntries' | 'numbers' | 'longs'>;

/** The embedded messages, bytes entries, numbers and 64-bit numbers a decoded ModelInferRequest holds. */
export function decodedCounts(msg: WireModelInferRequest): Counted {
  const n = (a: readonly unknown[] | undefined) => a?.length ?? 0;
  const mapEntries = (m: object | undefined) => 2 * Object.keys(m ?? {}).length; // entry + its InferParameter
  let messages = msg.inputs.length + msg.outputs.length + mapEntries(msg.parameters);
  let bytesEntries = msg.raw_input_contents.length;
  let numbers = 0;
  let longs = 0;
  for (const input of msg.inputs) {
    messages += mapEntries(input.parameters);
    longs += input.shape.length;
    const c = input.contents;
    if (!c) continue;
    messages++;
    bytesEntries += n(c.bytes_contents);
    numbers += n(c.bool_contents) + n(c.int_contents) + n(c.uint_contents) + n(c.fp32_contents) + n(c.fp64_contents);
    longs += n(c.int64_contents) + n(c.uint64_contents);
  }
  for (const output of msg.outputs) messages += mapEntries(output.parameters);
  return { messages, bytesEntries, numbers, longs };
}

/**
 * The scan of raw ModelInferRequest bytes that bounds what protobufjs decodes (issue 16,
 * apps/gateway/src/grpc/request-scan.ts). Oracle: the scan throws only its own WireScanError; when
 * protobufjs (grpc-js's deserializer) decodes the bytes, the scan read them too and counted at least
 * the entries and elements the decoded message holds, so a message it lets through cannot decode to
 * more than it counted.
 */
import { loadServices } from '../../../apps/gateway/src/grpc/proto-loader';
import { scanInferRequest, WireScanError } from '../../../apps/gateway/src/grpc/request-scan';
import type { WireModelInferRequest } from '../../../apps/gateway/src/grpc/wire-types';
import { check, fromRoot, refusesOnlyWith, type FuzzTarget } from '../target';
import { target as grpcInfer } from './grpc-infer';

const modelInfer = loadServices().inference.ModelInfer;

/** What the decoded message holds, counted as the scan counts it. */
function held(msg: WireModelInferRequest): { messages: number; bytesEntries: number; numbers: number; longs: number } {
  const n = (a: readonly unknown[] | undefined) => a?.length ?? 0;
  const maps = (m: object | undefined) => 2 * Object.keys(m ?? {}).length;
  let messages = msg.inputs.length + msg.outputs.length + maps(msg.parameters);
  let bytesEntries = msg.raw_input_contents.length;
  let numbers = 0;
  let longs = 0;
  for (const input of msg.inputs) {
    messages += maps(input.parameters);
    longs += input.shape.length;
    const c = input.contents;
    if (!c) continue;
    messages++;
    bytesEntries += n(c.bytes_contents);
    numbers += n(c.bool_contents) + n(c.int_contents) + n(c.uint_contents) + n(c.fp32_contents) + n(c.fp64_contents);
    longs += n(c.int64_contents) + n(c.uint64_contents);
  }
  for (const output of msg.outputs) messages += maps(output.parameters);
  return { messages, bytesEntries, numbers, longs };
}

export const target: FuzzTarget = {
  coverage: [fromRoot('apps/gateway/src/grpc/request-scan.ts')],
  maxLength: grpcInfer.maxLength,
  dictionary: grpcInfer.dictionary,
  seeds: () => grpcInfer.seeds(),
  run(input) {
    const counts = refusesOnlyWith(WireScanError, () => scanInferRequest(input));
    let decoded: WireModelInferRequest;
    try {
      decoded = modelInfer.requestDeserialize(input) as WireModelInferRequest;
    } catch {
      return; // protobufjs refuses it too (or the scan accepted what protobufjs refuses: harmless)
    }
    check(counts !== undefined, 'protobufjs decodes bytes the scan refuses');
    const h = held(decoded);
    for (const key of Object.keys(h) as (keyof typeof h)[]) check(counts![key] >= h[key], `scan counted ${counts![key]} ${key}, protobufjs decoded ${h[key]}`);
  },
};

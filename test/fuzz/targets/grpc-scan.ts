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
import { decodedCounts } from '../../helpers/scan-oracle';
import { check, fromRoot, refusesOnlyWith, type FuzzTarget } from '../target';
import { target as grpcInfer } from './grpc-infer';

const modelInfer = loadServices().inference.ModelInfer;

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
    const h = decodedCounts(decoded);
    for (const key of Object.keys(h) as (keyof typeof h)[]) check(counts![key] >= h[key], `scan counted ${counts![key]} ${key}, protobufjs decoded ${h[key]}`);
  },
};

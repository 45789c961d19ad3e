import fc from 'fast-check';
import { fuzz, fuzzParams } from '../../../../test/helpers/fuzz';
import { decodedCounts, type Counted } from '../../../../test/helpers/scan-oracle';
import { loadServices } from './proto-loader';
import { ScanLimitError, scanInferRequest, WireScanError } from './request-scan';
import type { WireModelInferRequest } from './wire-types';

// The deserializer grpc-js runs (proto-loader's options), whose allocations the scan counts.
const modelInfer = loadServices().inference.ModelInfer;
const deserialize = (bytes: Buffer) => modelInfer.requestDeserialize(bytes) as WireModelInferRequest;
const serialize = (msg: unknown) => modelInfer.requestSerialize(msg);

function scanCounts(bytes: Uint8Array): Counted {
  const { messages, bytesEntries, numbers, longs } = scanInferRequest(bytes);
  return { messages, bytesEntries, numbers, longs };
}

const long = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String);
const paramArb = fc.oneof(
  fc.record({ bool_param: fc.boolean() }),
  fc.record({ int64_param: long }),
  fc.record({ uint64_param: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String) }),
  fc.record({ string_param: fc.string({ maxLength: 6 }) }),
  fc.record({ double_param: fc.double() }),
);
const paramsArb = fc.dictionary(fc.string({ maxLength: 6 }), paramArb, { maxKeys: 3 });
const contentsArb = fc.record(
  {
    bool_contents: fc.array(fc.boolean(), { maxLength: 8 }),
    int_contents: fc.array(fc.integer(), { maxLength: 8 }),
    int64_contents: fc.array(long, { maxLength: 8 }),
    uint_contents: fc.array(fc.nat(), { maxLength: 8 }),
    uint64_contents: fc.array(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String), { maxLength: 8 }),
    fp32_contents: fc.array(fc.float(), { maxLength: 8 }),
    fp64_contents: fc.array(fc.double(), { maxLength: 8 }),
    bytes_contents: fc.array(fc.uint8Array({ maxLength: 8 }).map((a) => Buffer.from(a)), { maxLength: 8 }),
  },
  { requiredKeys: [] },
);
const requestArb = fc.record(
  {
    model_name: fc.string({ maxLength: 8 }),
    model_version: fc.string({ maxLength: 3 }),
    id: fc.string({ maxLength: 8 }),
    parameters: paramsArb,
    inputs: fc.array(
      fc.record(
        {
          name: fc.string({ maxLength: 4 }),
          datatype: fc.constantFrom('FP32', 'INT64', 'BYTES', 'BOOL'),
          shape: fc.array(long, { maxLength: 4 }),
          parameters: paramsArb,
          contents: contentsArb,
        },
        { requiredKeys: ['name'] },
      ),
      { maxLength: 3 },
    ),
    outputs: fc.array(fc.record({ name: fc.string({ maxLength: 4 }), parameters: paramsArb }, { requiredKeys: [] }), { maxLength: 3 }),
    raw_input_contents: fc.array(fc.uint8Array({ maxLength: 16 }).map((a) => Buffer.from(a)), { maxLength: 3 }),
  },
  { requiredKeys: [] },
);

/** A valid encoding with a few bytes changed, inserted or cut. */
const mutatedArb = fc
  .tuple(requestArb.map((r) => serialize(r)), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('set', 'insert', 'cut')), { minLength: 1, maxLength: 4 }))
  .map(([bytes, edits]) => {
    const out = [...bytes];
    for (const [at, value, edit] of edits) {
      const i = out.length === 0 ? 0 : at % out.length;
      if (edit === 'set' && out.length > 0) out[i] = value;
      else if (edit === 'insert') out.splice(i, 0, value);
      else out.splice(i, 1);
    }
    return Buffer.from(out);
  });

/**
 * The scan bounds what protobufjs makes: whatever protobufjs decodes the scan reads too, counting at
 * least what the decoded message holds (it counts every occurrence, also those protobufjs merges or
 * replaces); the scan throws only its own error.
 */
function agrees(bytes: Buffer): void {
  let scanned: Counted | undefined;
  try {
    scanned = scanCounts(bytes);
  } catch (e) {
    if (!(e instanceof WireScanError)) throw e;
  }
  let decoded: WireModelInferRequest | undefined;
  try {
    decoded = deserialize(bytes);
  } catch {
    // protobufjs refuses it: the scan may have accepted it (it does not read every value).
  }
  if (decoded !== undefined) {
    // Whatever protobufjs decodes, the scan read too (no message it decodes is refused as malformed).
    expect(scanned).toBeDefined();
    const held = decodedCounts(decoded);
    for (const key of Object.keys(held) as (keyof Counted)[]) expect(scanned![key]).toBeGreaterThanOrEqual(held[key]);
  }
}

describe('scanInferRequest (property)', () => {
  it('counts exactly what protobufjs decodes from any valid ModelInferRequest', () => {
    fuzz(
      fc.property(requestArb, (request) => {
        const bytes = serialize(request);
        expect(scanCounts(bytes)).toEqual(decodedCounts(deserialize(bytes)));
      }),
    );
  });

  it('throws only WireScanError on random bytes, and bounds what protobufjs decodes from them', () => {
    fuzz(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => agrees(Buffer.from(bytes))), fuzzParams(1000));
  });

  it('bounds what protobufjs decodes from valid messages with bytes changed, inserted or cut', () => {
    fuzz(fc.property(mutatedArb, (bytes) => agrees(bytes)), fuzzParams(1000));
  });

  it('never throws anything but its two errors under a limit', () => {
    fuzz(
      fc.property(fc.oneof(mutatedArb, fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a))), fc.nat(4096), (bytes, limit) => {
        try {
          const counts = scanInferRequest(bytes, limit);
          expect(counts.cost).toBeLessThanOrEqual(limit);
        } catch (e) {
          if (!(e instanceof WireScanError) && !(e instanceof ScanLimitError)) throw e;
        }
      }),
    );
  });
});

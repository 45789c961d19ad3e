import fc from 'fast-check';
import { InferenceError } from '@nereid/protocol';
import { bytesView, isBytesData, type Tensor, type TensorData } from '@nereid/tensor';
import { fuzz, fuzzParams, hostileShapeArb, onlyThrows, rawTensorArb } from '../../../../test/helpers/fuzz';
import { decodeInferRequest } from './infer-request';
import { loadServices } from './proto-loader';
import type { WireModelInferRequest } from './wire-types';

// The path a call takes: grpc-js deserializes the bytes with proto-loader's options, then the decoder runs.
const modelInfer = loadServices().inference.ModelInfer;
const deserialize = (bytes: Buffer) => modelInfer.requestDeserialize(bytes) as WireModelInferRequest;
const serialize = (msg: unknown) => modelInfer.requestSerialize(msg);

function wire(data: TensorData): Buffer {
  if (!isBytesData(data)) return Buffer.from(bytesView(data));
  return Buffer.concat(data.map((e) => Buffer.concat([Buffer.from(Uint32Array.of(e.byteLength).buffer), e])));
}

function expectBounded(msg: WireModelInferRequest, inputs: readonly Tensor[]): void {
  const wireBytes = msg.raw_input_contents.reduce((n, b) => n + b.length, 0);
  for (const t of inputs) {
    const count = t.shape.reduce((a, d) => a * d, 1);
    expect(t.data.length).toBe(count);
    if (msg.raw_input_contents.length > 0) expect(count).toBeLessThanOrEqual(wireBytes);
  }
}

const paramArb = fc.oneof(
  fc.record({ bool_param: fc.boolean() }),
  fc.record({ int64_param: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String) }),
  fc.record({ uint64_param: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String) }),
  fc.record({ string_param: fc.string() }),
  fc.record({ double_param: fc.double() }),
);
const paramsArb = fc.dictionary(
  fc.oneof(fc.constantFrom('sequence_id', 'sequence_start', 'priority', 'timeout', 'classification', 'binary_data'), fc.string()),
  paramArb,
  { maxKeys: 4 },
);
const contentsArb = fc.record(
  {
    bool_contents: fc.array(fc.boolean(), { maxLength: 8 }),
    int_contents: fc.array(fc.integer(), { maxLength: 8 }),
    int64_contents: fc.array(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String), { maxLength: 8 }),
    uint_contents: fc.array(fc.nat(), { maxLength: 8 }),
    fp32_contents: fc.array(fc.float(), { maxLength: 8 }),
    fp64_contents: fc.array(fc.double(), { maxLength: 8 }),
    bytes_contents: fc.array(fc.uint8Array({ maxLength: 8 }), { maxLength: 8 }),
  },
  { requiredKeys: [] },
);
const hostileRequestArb = fc.record({
  model_name: fc.string({ maxLength: 8 }),
  model_version: fc.oneof(fc.constantFrom('', '1', '-1', '99999999999999999999'), fc.string({ maxLength: 4 })),
  id: fc.string({ maxLength: 8 }),
  parameters: paramsArb,
  inputs: fc.array(
    fc.record({
      name: fc.string({ maxLength: 4 }),
      datatype: fc.oneof(fc.constantFrom('FP32', 'INT64', 'BYTES', 'BOOL', 'FP16', 'UINT8', 'INT8', 'UINT64'), fc.string()),
      shape: fc.oneof(hostileShapeArb.map((s) => s.map(String)), fc.array(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String))),
      parameters: paramsArb,
      contents: fc.option(contentsArb, { nil: undefined }),
    }),
    { maxLength: 3 },
  ),
  outputs: fc.array(fc.record({ name: fc.string({ maxLength: 4 }), parameters: paramsArb }), { maxLength: 2 }),
  raw_input_contents: fc.array(fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)), { maxLength: 3 }),
});

describe('gRPC infer request decoder (fuzz)', () => {
  it('round-trips raw_input_contents of every datatype through the wire', () => {
    fuzz(
      fc.property(rawTensorArb(), ({ datatype, shape, raw }) => {
        const bytes = serialize({
          model_name: 'm',
          inputs: [{ name: 'x', datatype, shape: shape.map(String) }],
          raw_input_contents: [Buffer.from(raw)],
        });
        const { request } = decodeInferRequest(deserialize(bytes));
        expect(request.inputs[0].shape).toEqual(shape);
        expect(wire(request.inputs[0].data)).toEqual(Buffer.from(raw));
      }),
      fuzzParams(),
    );
  });

  it('refuses hostile requests only with InferenceError, within the bytes sent', () => {
    fuzz(
      fc.property(hostileRequestArb, (msg) => {
        const decodedMsg = deserialize(serialize(msg));
        const decoded = onlyThrows(InferenceError, () => decodeInferRequest(decodedMsg));
        if (decoded) expectBounded(decodedMsg, decoded.request.inputs);
      }),
      fuzzParams(),
    );
  });

  it('refuses arbitrary protobuf bytes that deserialize only with InferenceError', () => {
    fuzz(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        let msg: WireModelInferRequest;
        try {
          msg = deserialize(Buffer.from(bytes));
        } catch {
          return; // grpc-js answers an undecodable message itself, before any handler runs
        }
        const decoded = onlyThrows(InferenceError, () => decodeInferRequest(msg));
        if (decoded) expectBounded(msg, decoded.request.inputs);
      }),
      fuzzParams(),
    );
  });
});

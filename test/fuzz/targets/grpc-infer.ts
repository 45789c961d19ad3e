/**
 * The gRPC ModelInfer request decoder, on the path a call takes: the message bytes are deserialized
 * as grpc-js does with the service's deserializer (@grpc/proto-loader over protobufjs), then
 * apps/gateway/src/grpc/infer-request.ts decodes them. A message protobufjs cannot read is refused
 * by grpc-js itself (the call ends with an error status) and is not a finding; the decoder's
 * oracle is as for the HTTP decoders: decoded, or an InferenceError (INVALID_ARGUMENT and its kin).
 */
import { decodeInferRequest } from '../../../apps/gateway/src/grpc/infer-request';
import { loadServices } from '../../../apps/gateway/src/grpc/proto-loader';
import type { WireModelInferRequest } from '../../../apps/gateway/src/grpc/wire-types';
import { InferenceError } from '@nereid/protocol';
import { fromRoot, refusesOnlyWith, type FuzzTarget } from '../target';
import { ALL_DATATYPES, checkTensors, seedTensorBytes } from './tensors';

const modelInfer = loadServices().inference.ModelInfer;

function serialize(message: object): Uint8Array {
  return modelInfer.requestSerialize(message);
}

/** Protobuf field keys (tag << 3 | wire type) of ModelInferRequest and its nested messages, varint edges. */
const WIRE_TOKENS: Uint8Array[] = [
  ...[0x0a, 0x12, 0x1a, 0x22, 0x2a, 0x32, 0x3a, 0x08, 0x10, 0x18, 0x20, 0x28, 0x29, 0x31, 0x0d, 0x15, 0x1d, 0x25, 0x2d, 0x30, 0x38].map((b) => Uint8Array.of(b)),
  Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0x0f),
  Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
  Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x08),
  Uint8Array.of(0x7f),
  Uint8Array.of(0x80, 0x01),
];

export const target: FuzzTarget = {
  coverage: [fromRoot('apps/gateway/src/grpc/'), fromRoot('libs/tensor/src/'), fromRoot('libs/protocol/src/'), fromRoot('node_modules/protobufjs/')],
  maxLength: 4096,
  dictionary: [
    ...WIRE_TOKENS,
    ...ALL_DATATYPES,
    'sequence_id', 'sequence_start', 'sequence_end', 'priority', 'timeout', 'classification', 'binary_data',
    'shared_memory_region', 'shared_memory_offset', 'shared_memory_byte_size', 'triton_enable_empty_final_response', 'headers',
    '-1', '18446744073709551615', '9223372036854775808',
  ],
  seeds() {
    const seeds = ALL_DATATYPES.map((datatype) =>
      serialize({
        model_name: 'm',
        model_version: '1',
        inputs: [{ name: 'x', datatype, shape: ['2', '2'] }],
        raw_input_contents: [Buffer.from(seedTensorBytes(datatype, 4))],
      }),
    );
    seeds.push(
      serialize({
        model_name: 'm',
        id: 'r',
        parameters: {
          sequence_id: { uint64_param: '18446744073709551615' },
          sequence_start: { bool_param: true },
          priority: { int64_param: '2' },
          timeout: { int64_param: '100' },
          note: { string_param: 's' },
          ratio: { double_param: 0.5 },
        },
        inputs: [
          { name: 'a', datatype: 'INT32', shape: ['3'], contents: { int_contents: [1, -2, 3] } },
          { name: 'b', datatype: 'BYTES', shape: ['2'], contents: { bytes_contents: [Buffer.from('x'), Buffer.from('')] } },
          { name: 'c', datatype: 'FP64', shape: ['1'], contents: { fp64_contents: [1.5] } },
          { name: 'd', datatype: 'UINT64', shape: ['2'], contents: { uint64_contents: ['18446744073709551615', '0'] } },
          { name: 'e', datatype: 'BOOL', shape: ['2'], contents: { bool_contents: [true, false] } },
        ],
        outputs: [{ name: 'o', parameters: { classification: { int64_param: '2' } } }],
      }),
      serialize({
        model_name: 'm',
        inputs: [{ name: 'x', datatype: 'FP32', shape: ['-1', '4'], parameters: { shared_memory_region: { string_param: 'r' } } }],
      }),
    );
    return seeds;
  },
  run(input) {
    let message: WireModelInferRequest;
    try {
      message = modelInfer.requestDeserialize(input) as WireModelInferRequest;
    } catch {
      return; // grpc-js answers the call with an error status
    }
    const decoded = refusesOnlyWith(InferenceError, () => decodeInferRequest(message));
    if (decoded) checkTensors(decoded.request.inputs, input.length);
  },
};

/**
 * The HTTP JSON infer decoder (apps/gateway/src/http/infer-codec.ts with libs/tensor's JSON codec):
 * the input is a whole request body without Inference-Header-Content-Length. Oracle: decoded, or
 * refused with an InferenceError (the 400 the route answers); a decoded request obeys checkTensors.
 */
import { decodeInferRequest } from '../../../apps/gateway/src/http/infer-codec';
import { InferenceError } from '@nereid/protocol';
import { fromRoot, refusesOnlyWith, type FuzzTarget } from '../target';
import { ALL_DATATYPES, checkTensors, KSERVE_TOKENS, seedJsonData } from './tensors';

const JSON_TYPES = ALL_DATATYPES.filter((d) => d !== 'FP16' && d !== 'BF16');

function body(value: unknown): Uint8Array {
  return Buffer.from(JSON.stringify(value));
}

export const target: FuzzTarget = {
  coverage: [fromRoot('apps/gateway/src/http/'), fromRoot('libs/tensor/src/'), fromRoot('libs/protocol/src/')],
  maxLength: 4096,
  dictionary: KSERVE_TOKENS,
  seeds() {
    const seeds = JSON_TYPES.map((datatype) =>
      body({ inputs: [{ name: 'x', datatype, shape: [2, 2], data: seedJsonData(datatype, 4) }] }),
    );
    seeds.push(
      body({
        id: 'r1',
        parameters: { sequence_id: 7, sequence_start: true, priority: 1, timeout: 100, binary_data_output: true },
        inputs: [
          { name: 'a', datatype: 'INT64', shape: [1, 3], data: [[1, 2, 3]] },
          { name: 'b', datatype: 'BYTES', shape: [2], data: ['x', 'y'], parameters: { note: 'n' } },
        ],
        outputs: [{ name: 'o', parameters: { classification: 2 } }, { name: 'p', parameters: { binary_data: false } }],
      }),
      body({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1], parameters: { shared_memory_region: 'r', shared_memory_byte_size: 4 } }] }),
      Buffer.from('{"inputs":[{"name":"x","datatype":"UINT64","shape":[2],"data":[18446744073709551615, 1e2]}],"parameters":{"sequence_id":18446744073709551615}}'),
      Buffer.from('{"inputs":[{"name":"x","datatype":"FP64","shape":[3],"data":[NaN, Infinity, -1e-400]}]}'),
    );
    return seeds;
  },
  run(input) {
    const decoded = refusesOnlyWith(InferenceError, () => decodeInferRequest(input, undefined, 'm', -1));
    if (decoded) checkTensors(decoded.request.inputs, input.length);
  },
};

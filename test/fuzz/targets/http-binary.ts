/**
 * The HTTP binary tensor extension and raw binary requests (apps/gateway/src/http/infer-codec.ts,
 * libs/tensor's binary codec). The input is three parts:
 *
 *   <Inference-Header-Content-Length value, or "-" for none>\n<the model's inputs>\n<body>
 *
 * where the model's inputs (asked for by a raw binary request, header length 0) are
 * `name:DATATYPE:d,d,...` separated by `;` (as metadata would report them; an unknown datatype
 * stands for FP32, dims are clamped to -1 and above). Oracle as for http-json.
 */
import { decodeInferRequest, type RawInputInfo } from '../../../apps/gateway/src/http/infer-codec';
import { InferenceError } from '@nereid/protocol';
import { isDataType } from '@nereid/tensor';
import { fromRoot, refusesOnlyWith, type FuzzTarget } from '../target';
import { ALL_DATATYPES, checkTensors, KSERVE_TOKENS, seedTensorBytes } from './tensors';

function modelInputs(spec: string): RawInputInfo[] {
  if (spec === '') return [];
  return spec.split(';').map((entry) => {
    const [name = '', datatype = '', dims = ''] = entry.split(':');
    return {
      name,
      datatype: isDataType(datatype) ? datatype : 'FP32',
      shape: dims === '' ? [] : dims.split(',').map((d) => Math.max(-1, Math.trunc(Number(d)) || 0)),
    };
  });
}

function split(input: Buffer): { header: string | undefined; inputs: RawInputInfo[]; body: Buffer } {
  const first = input.indexOf(0x0a);
  const second = first < 0 ? -1 : input.indexOf(0x0a, first + 1);
  if (second < 0) return { header: undefined, inputs: [], body: input };
  const header = input.subarray(0, first).toString('latin1');
  return {
    header: header === '-' ? undefined : header,
    inputs: modelInputs(input.subarray(first + 1, second).toString('latin1')),
    body: input.subarray(second + 1),
  };
}

function binaryRequest(json: object, binary: Uint8Array[]): Uint8Array {
  const head = Buffer.from(JSON.stringify(json));
  return Buffer.concat([Buffer.from(`${head.length}\n\n`), head, ...binary]);
}

export const target: FuzzTarget = {
  coverage: [fromRoot('apps/gateway/src/http/'), fromRoot('libs/tensor/src/'), fromRoot('libs/protocol/src/')],
  maxLength: 4096,
  dictionary: [...KSERVE_TOKENS, '\n', ':FP32:-1', ':BYTES:1', ':INT8:-1,2', '-\n', '0\n', Buffer.from(Uint32Array.of(0xffffffff).buffer)],
  seeds() {
    const seeds = ALL_DATATYPES.map((datatype) => {
      const bytes = seedTensorBytes(datatype, 4);
      return binaryRequest(
        {
          inputs: [{ name: 'x', datatype, shape: [2, 2], parameters: { binary_data_size: bytes.length } }],
          outputs: [{ name: 'y', parameters: { binary_data: true } }],
        },
        [bytes],
      );
    });
    const a = seedTensorBytes('FP32', 3);
    const b = seedTensorBytes('BYTES', 2);
    seeds.push(
      binaryRequest(
        {
          parameters: { binary_data_output: true },
          inputs: [
            { name: 'a', datatype: 'FP32', shape: [3], parameters: { binary_data_size: a.length } },
            { name: 'b', datatype: 'BYTES', shape: [2], parameters: { binary_data_size: b.length } },
            { name: 'c', datatype: 'INT32', shape: [1], data: [5] },
          ],
        },
        [a, b],
      ),
      Buffer.concat([Buffer.from('0\nx:FP32:-1,2\n'), seedTensorBytes('FP32', 4)]),
      Buffer.concat([Buffer.from('0\nx:BYTES:-1\n'), Buffer.from('raw bytes')]),
      Buffer.concat([Buffer.from('0\nx:INT16:2;y:INT16:2\n'), seedTensorBytes('INT16', 2)]),
    );
    return seeds;
  },
  run(input) {
    const { header, inputs, body } = split(input);
    const decoded = refusesOnlyWith(InferenceError, () => decodeInferRequest(body, header, 'm', -1, () => inputs));
    if (decoded) checkTensors(decoded.request.inputs, body.length);
  },
};

import type { SharedMemoryUse } from '@nereid/core';
import type { InferenceResponse } from '@nereid/protocol';
import { errorOf } from '../../../test/helpers/inference-error';
import { encodeInferResponse } from './grpc/infer-response';
import { checkOutputSize, DEFAULT_MAX_OUTPUT_SIZE } from './output-size';

const response = (outputs: InferenceResponse['outputs']): InferenceResponse => ({ id: '', modelName: 'big', modelVersion: '1', outputs });
// 16 bytes of FP32 and a BYTES tensor of 4 + 2 and 4 + 0 bytes: 26 bytes in all.
const OUTPUTS: InferenceResponse['outputs'] = [
  { name: 'F', datatype: 'FP32', shape: [4], data: new Float32Array(4) },
  { name: 'S', datatype: 'BYTES', shape: [2], data: [Buffer.from('ab'), Buffer.from('')] },
];

/** A request's shared memory with `names` bound to regions, each write recorded. */
function regions(names: string[], writes: string[] = []): SharedMemoryUse {
  return {
    verifyInputs: () => undefined,
    output: (name: string) => (names.includes(name) ? { write: () => writes.push(name), release: () => undefined } : undefined),
  } as unknown as SharedMemoryUse;
}

describe('checkOutputSize (--max-output-size)', () => {
  it('counts the outputs as the binary forms carry them (BYTES with their lengths), up to the bound included', () => {
    expect(DEFAULT_MAX_OUTPUT_SIZE).toBe(2147483647);
    expect(() => checkOutputSize(response(OUTPUTS), 26)).not.toThrow();
    const e = errorOf(() => checkOutputSize(response(OUTPUTS), 25));
    expect(e.code).toBe('INVALID_ARG');
    expect(e.message).toBe(
      "the response of model 'big' holds 26 bytes of output data, more than the maximum allowed output size of 25 bytes. Use --max-output-size to increase the limit.",
    );
  });

  it('leaves out outputs written to client shared memory: their region bounds them', () => {
    expect(() => checkOutputSize(response(OUTPUTS), 10, regions(['F']))).not.toThrow();
    expect(() => checkOutputSize(response(OUTPUTS), 10, regions(['S']))).toThrow('holds 16 bytes');
  });

  it('gRPC: encodeInferResponse refuses before writing anything into a region', () => {
    const writes: string[] = [];
    expect(() => encodeInferResponse(response(OUTPUTS), undefined, regions(['S'], writes), 15)).toThrow(
      "the response of model 'big' holds 16 bytes of output data, more than the maximum allowed output size of 15 bytes",
    );
    expect(writes).toEqual([]);
    expect(encodeInferResponse(response(OUTPUTS), undefined, regions(['S'], writes), 16).raw_output_contents[0].byteLength).toBe(16);
    expect(writes).toEqual(['S']);
  });
});

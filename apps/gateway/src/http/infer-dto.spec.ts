import { checkInferStructure, isWellFormedInfer, validateInferStructure } from './infer-dto';

const good = {
  id: 'x',
  parameters: { a: 1 },
  inputs: [{ name: 'IN', shape: [1, 2], datatype: 'FP32', data: [1, 2], parameters: { binary_data_size: 8 } }],
  outputs: [{ name: 'OUT', parameters: { binary_data: true } }],
};

function variants(): unknown[] {
  const v: unknown[] = [];
  const input = good.inputs[0];
  const bad: Record<string, unknown>[] = [
    { id: 3 },
    { parameters: [] },
    { parameters: 'x' },
    { inputs: undefined },
    { inputs: {} },
    { inputs: [null] },
    { inputs: ['x'] },
    { inputs: [{ ...input, name: 1 }] },
    { inputs: [{ ...input, name: undefined }] },
    { inputs: [{ ...input, datatype: 'FLOAT' }] },
    { inputs: [{ ...input, datatype: 4 }] },
    { inputs: [{ ...input, shape: [-1] }] },
    { inputs: [{ ...input, shape: [1.5] }] },
    { inputs: [{ ...input, shape: ['1'] }] },
    { inputs: [{ ...input, shape: 2 }] },
    { inputs: [{ ...input, shape: undefined }] },
    { inputs: [{ ...input, parameters: [] }] },
    { inputs: [{ ...input, parameters: 'p' }] },
    { outputs: {} },
    { outputs: [1] },
    { outputs: [{ name: 2 }] },
    { outputs: [{ name: 'o', parameters: [1] }] },
  ];
  for (const b of bad) v.push({ ...good, ...b });
  v.push([], 'x', 1, null);
  return v;
}

describe('infer request structure', () => {
  it('accepts a well-formed request on the fast path', () => {
    expect(isWellFormedInfer(good)).toBe(true);
    expect(() => validateInferStructure(good)).not.toThrow();
    expect(() => checkInferStructure(good)).not.toThrow();
  });

  it.each(variants().map((v, i) => [i, v]))('rejects malformed case %i through class-validator', (_i, body) => {
    expect(() => checkInferStructure(body)).toThrow();
    expect(() => validateInferStructure(body)).toThrow();
    if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
      expect(isWellFormedInfer(body as Record<string, unknown>)).toBe(false);
    }
  });

  it.each([
    [{ inputs: [{ name: 'a', shape: [1], datatype: 'NOPE' }] }, 'invalid datatype for input a'],
    [{ inputs: [{ name: 'a', shape: [-1], datatype: 'FP32' }] }, "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer"],
    [{ inputs: [{ name: 'a', shape: 2, datatype: 'FP32' }] }, "Unable to parse 'shape': attempt to access JSON non-array as array"],
    [{ inputs: [{ name: 'a', datatype: 'FP32' }] }, "Unable to parse 'shape': attempt to access non-existing object member 'shape'"],
    [{ inputs: [{ name: 1, shape: [1], datatype: 'FP32' }] }, "Unable to parse 'name': attempt to access JSON non-string as string"],
    [{ inputs: [null] }, "Unable to parse 'name': attempt to access non-existing object member 'name'"],
    [{ inputs: [{ name: 'a', shape: [1], datatype: 4 }] }, "Unable to parse 'datatype': attempt to access JSON non-string as string"],
    [{}, "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'"],
    [[], "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'"],
    [{ inputs: {} }, "Unable to parse 'inputs': attempt to access JSON non-array as array"],
    [{ id: 3, inputs: {} }, "Unable to parse 'id': attempt to access JSON non-string as string"],
    [{ parameters: 'x', inputs: [] }, 'failed to get request params.: attempt to get members for non-object'],
    [{ inputs: [], outputs: [{ name: 2 }] }, "Unable to parse 'name': attempt to access JSON non-string as string"],
    [{ inputs: [], outputs: 'o' }, "Unable to parse 'outputs': attempt to access JSON non-array as array"],
    [
      { inputs: [{ name: 'a', shape: [1], datatype: 'FP32', parameters: [] }] },
      "Unable to parse 'parameters': attempt to access JSON non-object as object",
    ],
  ])('answers in Triton words: %j', (body, message) => {
    expect(() => checkInferStructure(body)).toThrow(expect.objectContaining({ code: 'INVALID_ARG', message }));
  });
});

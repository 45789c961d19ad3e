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

  it('names the offending field', () => {
    expect(() => checkInferStructure({ inputs: [{ name: 'a', shape: [1], datatype: 'NOPE' }] })).toThrow(/inputs\[0\]: datatype must be one of/);
    expect(() => checkInferStructure({ inputs: [{ name: 'a', shape: [-1], datatype: 'FP32' }] })).toThrow(/inputs\[0\]: each value in shape must not be less than 0/);
  });
});

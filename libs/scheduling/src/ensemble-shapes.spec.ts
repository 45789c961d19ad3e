import { shapeFor, type EnsembleValue } from './ensemble-shapes';

const value = (shape: number[], batch: number): EnsembleValue => ({
  tensor: { name: 't', datatype: 'FP32', shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) },
  batch,
});

describe('shapeFor (Triton\'s reshape between batching and non-batching models)', () => {
  it('adds a batch dimension of 1 to an unbatched value whose shape is the batching reader\'s dims', () => {
    expect(shapeFor([4], true, value([4], 0))).toEqual([1, 4]);
    expect(shapeFor([-1, 3], true, value([2, 3], 0))).toEqual([1, 2, 3]);
    expect(shapeFor([4], true, value([1, 4], 0))).toEqual([1, 4]);
  });

  it('removes the batch dimension of a batch of one whose shape is not the non-batching reader\'s dims', () => {
    expect(shapeFor([4], false, value([1, 4], 1))).toEqual([4]);
    // A non-batching model whose dims take the whole batch gets it as it is.
    expect(shapeFor([-1, 4], false, value([1, 4], 1))).toEqual([1, 4]);
    expect(shapeFor([-1, 4], false, value([3, 4], 3))).toEqual([3, 4]);
    expect(shapeFor([4], false, value([3, 4], 3))).toEqual([3, 4]);
  });

  it('passes values between alike readers and to unknown readers as they are', () => {
    expect(shapeFor([4], true, value([2, 4], 2))).toEqual([2, 4]);
    expect(shapeFor([4], false, value([4], 0))).toEqual([4]);
    expect(shapeFor(undefined, true, value([4], 0))).toEqual([4]);
  });
});

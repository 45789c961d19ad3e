import type { Tensor } from '@nereid/tensor';

/**
 * A value of an ensemble tensor and the batch it came from: the batch size of the request that
 * produced it when that model (or the ensemble, for its inputs) batches, 0 when it does not.
 */
export interface EnsembleValue {
  tensor: Tensor;
  batch: number;
}

/** Shapes equal where the config gives a size (-1 matches any size). */
function dimsMatch(configDims: readonly number[], shape: readonly number[]): boolean {
  return configDims.length === shape.length && configDims.every((d, i) => d === -1 || shape[i] === -1 || d === shape[i]);
}

/**
 * The shape a value takes where a model (or the ensemble's output) reads it, by Triton's rule
 * between batching and non-batching models (its ReshapeTensorDims): a value from a non-batching
 * source going where batching is expected gets a batch dimension of 1 when its shape is the
 * config's dims; a value from a batch of one going where no batching is expected loses its batch
 * dimension when its shape is not the config's dims. Anything else passes as it is.
 * `configDims` undefined: the reader is unknown here (the server checks the shape).
 */
export function shapeFor(configDims: readonly number[] | undefined, batching: boolean, value: EnsembleValue): number[] {
  const { shape } = value.tensor;
  if (configDims === undefined || batching === (value.batch !== 0)) return shape;
  if (batching) return dimsMatch(configDims, shape) ? [1, ...shape] : shape;
  return value.batch === 1 && !dimsMatch(configDims, shape) ? shape.slice(1) : shape;
}

import type { ModelConfig } from '@nereid/model-config';
import { MAX_PROBE_BYTES, probeFeeds } from './session-probe';

const model = (dims: number[], maxBatchSize = 8, dataType = 'TYPE_FP32'): ModelConfig => ({
  name: 'm',
  max_batch_size: maxBatchSize,
  input: [{ name: 'IN', data_type: dataType, dims }],
});

describe('probeFeeds: the probe input is sized before it is made (issue 16)', () => {
  it('builds ones for the largest batch, free dims as 1', () => {
    expect(probeFeeds(model([-1, 2]))).toEqual([{ name: 'IN', type: 'float32', dims: [8, 1, 2], data: new Float32Array(16).fill(1) }]);
  });

  it('does not probe (a worker thread then runs the model) when the input would exceed MAX_PROBE_BYTES or an exact count', () => {
    expect(MAX_PROBE_BYTES).toBe(8 * 1024 * 1024);
    expect(probeFeeds(model([MAX_PROBE_BYTES / 4], 1))).toHaveLength(1);
    expect(probeFeeds(model([MAX_PROBE_BYTES / 4 + 1], 1))).toBeUndefined();
    expect(probeFeeds(model([MAX_PROBE_BYTES / 32 + 1], 8))).toBeUndefined();
    expect(probeFeeds(model([2147483647, 2147483647, 2147483647]))).toBeUndefined();
    expect(probeFeeds(model([100_000_000], 0, 'TYPE_STRING'))).toBeUndefined();
  });
});

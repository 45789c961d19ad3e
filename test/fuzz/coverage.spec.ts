import { BlockCoverage, bucketOf } from './coverage';

describe('bucketOf', () => {
  it("puts hit counts in AFL's buckets", () => {
    expect([1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 127, 128, 10000].map(bucketOf)).toEqual([0, 1, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7]);
  });
});

describe('BlockCoverage', () => {
  const coverage = new BlockCoverage();
  let classify: (n: number) => string;
  beforeAll(() => {
    coverage.start();
    // Loaded after coverage started, so that it is compiled with block counters.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    classify = (require('./self-test/branches') as typeof import('./self-test/branches')).classify;
    const file = require.resolve('./self-test/branches');
    coverage.select({ include: [file], own: [file] });
  });
  afterAll(() => coverage.stop());

  it('reports new blocks and new hit-count buckets once, and nothing for an input seen before', () => {
    classify(-5);
    expect(coverage.collect()).toBeGreaterThan(0);
    const afterNegative = coverage.blocksReached;
    classify(-7);
    expect(coverage.collect()).toBe(0);
    classify(0);
    expect(coverage.collect()).toBeGreaterThan(0);
    expect(coverage.blocksReached).toBeGreaterThan(afterNegative);
    classify(1);
    expect(coverage.collect()).toBeGreaterThan(0);
    // The loop body runs 5 times instead of once: a new bucket of a block already reached.
    classify(5);
    expect(coverage.collect()).toBeGreaterThan(0);
    classify(6);
    expect(coverage.collect()).toBe(0);
    expect(coverage.blocksKnown).toBeGreaterThanOrEqual(coverage.blocksReached);
  });

  it('probes a batch for new blocks without merging it', () => {
    classify(3);
    expect(coverage.probe()).toBe(0);
    expect(coverage.collect()).toBe(0);
  });
});

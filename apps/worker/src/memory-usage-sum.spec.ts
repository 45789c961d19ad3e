import { sumMemoryUsage } from './memory-usage-sum';

describe('sumMemoryUsage', () => {
  it('adds the instances\' usage up per memory type and device', () => {
    expect(
      sumMemoryUsage([
        [{ type: 'CPU', id: 0, byteSize: 100 }],
        undefined,
        [{ type: 'CPU', id: 0, byteSize: 50 }, { type: 'GPU', id: 1, byteSize: 7 }],
        [],
      ]),
    ).toEqual([
      { type: 'CPU', id: 0, byteSize: 150 },
      { type: 'GPU', id: 1, byteSize: 7 },
    ]);
    expect(sumMemoryUsage([])).toEqual([]);
  });
});

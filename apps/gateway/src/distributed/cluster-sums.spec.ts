import type { ModelStatistics } from '@nereid/core';
import { mergeIndex, sumAll, sumStatistics } from './cluster-sums';

const d = (count: number, ns: number): { count: number; ns: number } => ({ count, ns });

function stats(over: Partial<ModelStatistics> = {}): ModelStatistics {
  return {
    name: 'm', version: '1', last_inference: 0, inference_count: 0, execution_count: 0,
    inference_stats: {
      success: d(0, 0), fail: d(0, 0), queue: d(0, 0), compute_input: d(0, 0), compute_infer: d(0, 0), compute_output: d(0, 0),
      cache_hit: d(0, 0), cache_miss: d(0, 0),
    },
    response_stats: {}, batch_stats: [], memory_usage: [],
    ...over,
  };
}

describe('sumStatistics', () => {
  it("adds a gateway's request figures to the workers' execution figures, batch sizes matched", () => {
    const gateway = stats({
      last_inference: 100, inference_count: 5,
      inference_stats: { ...stats().inference_stats, success: d(3, 3000), fail: d(1, 50), queue: d(3, 300), compute_infer: d(3, 90) },
      memory_usage: [],
    });
    const worker1 = stats({
      execution_count: 2,
      batch_stats: [{ batch_size: 2, compute_input: d(1, 1), compute_infer: d(1, 10), compute_output: d(1, 2) }, { batch_size: 1, compute_input: d(1, 1), compute_infer: d(1, 5), compute_output: d(1, 1) }],
      memory_usage: [{ type: 'CPU', id: 0, byte_size: 1000 }],
    });
    const worker2 = stats({
      last_inference: 250, inference_count: 2, execution_count: 1,
      inference_stats: { ...stats().inference_stats, success: d(2, 400) },
      response_stats: { '0': { success: d(1, 7) } },
      batch_stats: [{ batch_size: 2, compute_input: d(1, 3), compute_infer: d(1, 20), compute_output: d(1, 4) }],
      memory_usage: [{ type: 'CPU', id: 0, byte_size: 500 }, { type: 'GPU', id: 1, byte_size: 9 }],
    });
    const sum = sumStatistics(gateway, [worker1, worker2]);
    expect(sum.last_inference).toBe(250);
    expect([sum.inference_count, sum.execution_count]).toEqual([7, 3]);
    expect(sum.inference_stats.success).toEqual(d(5, 3400));
    expect(sum.inference_stats.fail).toEqual(d(1, 50));
    expect(sum.inference_stats.queue).toEqual(d(3, 300));
    expect(sum.response_stats).toEqual({ '0': { success: d(1, 7) } });
    expect(sum.batch_stats).toEqual([
      { batch_size: 1, compute_input: d(1, 1), compute_infer: d(1, 5), compute_output: d(1, 1) },
      { batch_size: 2, compute_input: d(2, 4), compute_infer: d(2, 30), compute_output: d(2, 6) },
    ]);
    expect(sum.memory_usage).toEqual([{ type: 'CPU', id: 0, byte_size: 1500 }, { type: 'GPU', id: 1, byte_size: 9 }]);
    // The inputs are left as they were.
    expect(gateway.inference_stats.success).toEqual(d(3, 3000));
    expect(worker1.batch_stats[0].compute_infer).toEqual(d(1, 10));
  });

  it("sumAll keeps the asking gateway's versions and adds only the same model and version", () => {
    const own = [stats({ version: '1', inference_count: 1 }), stats({ version: '2', inference_count: 10 })];
    const answers = [[stats({ version: '2', inference_count: 5 }), stats({ name: 'other', version: '1', inference_count: 99 })], [stats({ version: '3', inference_count: 7 })]];
    expect(sumAll(own, answers).map((s) => [s.name, s.version, s.inference_count])).toEqual([['m', '1', 1], ['m', '2', 15]]);
  });
});

describe('mergeIndex', () => {
  const served = (name: string): boolean => name !== 'orphan';

  it("shows READY versions only while a live worker serves them, and the workers' reasons where this gateway has none", () => {
    const own = [
      { name: 'a', version: '1', state: 'READY' as const, reason: '' },
      { name: 'orphan', version: '1', state: 'READY' as const, reason: '' },
      { name: 'broken' },
      { name: 'gone', version: '2', state: 'UNAVAILABLE' as const, reason: 'unloaded' },
      { name: 'never' },
    ];
    const workers = [
      [{ name: 'broken', version: '1', state: 'UNAVAILABLE' as const, reason: "failed to load 'broken': bad file" }, { name: 'gone', version: '2', state: 'UNAVAILABLE' as const, reason: 'unloaded' }],
      [{ name: 'broken', version: '1', state: 'UNAVAILABLE' as const, reason: 'unloaded' }, { name: 'never' }],
    ];
    expect(mergeIndex(own, workers, served)).toEqual([
      { name: 'a', version: '1', state: 'READY', reason: '' },
      { name: 'orphan', version: '1', state: 'UNAVAILABLE', reason: "no live worker of the cluster serves model 'orphan' version 1" },
      { name: 'broken', version: '1', state: 'UNAVAILABLE', reason: "failed to load 'broken': bad file" },
      { name: 'gone', version: '2', state: 'UNAVAILABLE', reason: 'unloaded' },
      { name: 'never' },
    ]);
  });

  it('a model this gateway has not loaded yet is READY once a worker has it READY', () => {
    const merged = mergeIndex([{ name: 'm' }], [[{ name: 'm', version: '1', state: 'LOADING', reason: '' }], [{ name: 'm', version: '1', state: 'READY', reason: '' }]], served);
    expect(merged).toEqual([{ name: 'm', version: '1', state: 'READY', reason: '' }]);
  });
});

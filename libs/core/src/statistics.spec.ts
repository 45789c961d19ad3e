import { ModelStatsRecorder } from './statistics';

describe('ModelStatsRecorder', () => {
  it('keeps every duration in whole nanoseconds, as Triton prints them', () => {
    const s = new ModelStatsRecorder('m', 1);
    s.recordSuccess(1026071.0000002291, 2);
    s.recordExecution(0.4, { inputNs: 10.6, inferNs: 1000.5, outputNs: 3 });
    s.recordFailure(99.9, 'BACKEND');
    s.recordBatch(2, { inputNs: 10.6, inferNs: 1000.5, outputNs: 3 });
    const snap = s.snapshot();
    const durations = [
      ...Object.values(snap.inference_stats),
      ...snap.batch_stats.flatMap((b) => [b.compute_input, b.compute_infer, b.compute_output]),
    ];
    for (const d of durations) expect(Number.isInteger(d.ns)).toBe(true);
    expect(snap.inference_stats.success).toEqual({ count: 1, ns: 1026071 });
    expect(snap.inference_stats.compute_infer).toEqual({ count: 1, ns: 1001 });
  });

  it("reports the version's memory usage in Triton's shape, and none when none was measured", () => {
    const s = new ModelStatsRecorder('m', 1, undefined, [{ type: 'CPU', id: 0, byteSize: 4096 }]);
    expect(s.snapshot().memory_usage).toEqual([{ type: 'CPU', id: 0, byte_size: 4096 }]);
    expect(new ModelStatsRecorder('m', 1).snapshot().memory_usage).toEqual([]);
  });

  it('counts inferences per successful request and executions per reported batch', () => {
    const s = new ModelStatsRecorder('m', 1);
    s.recordSuccess(500, 3);
    s.recordSuccess(500, 1);
    s.recordExecution(100, { inputNs: 1, inferNs: 2, outputNs: 3 });
    s.recordExecution(200, { inputNs: 1, inferNs: 2, outputNs: 3 });
    s.recordBatch(4, { inputNs: 1, inferNs: 2, outputNs: 3 });
    const snap = s.snapshot();
    expect(snap).toMatchObject({ inference_count: 4, execution_count: 1 });
    expect(snap.inference_stats.queue).toEqual({ count: 2, ns: 300 });
    expect(snap.batch_stats).toEqual([
      { batch_size: 4, compute_input: { count: 1, ns: 1 }, compute_infer: { count: 1, ns: 2 }, compute_output: { count: 1, ns: 3 } },
    ]);
  });
});

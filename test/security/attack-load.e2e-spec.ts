/**
 * The acceptance load test of issue 16 (bench/attack-load/run.js) with short phases: the built
 * server (`npm run build` first) under a non-reading pipelining client, 64 gzip bombs and 1,100
 * half-open connections, one after the other, while 8 normal clients run. The full run (10 s per
 * phase) and its figures are in bench/RESULTS.md.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { runAttackLoad } = require('../../bench/attack-load/run.js') as {
  runAttackLoad(options: { phaseMs: number; fdLimit?: number; settleMs?: number; warmup?: number; log?: (line: string) => void }): Promise<{
    idleMb: number;
    peakRatio: number;
    afterRatio: number;
    normalOk: number;
    normalFailures: number;
    failureSamples: string[];
    liveMs: number;
  }>;
};

describe('attack load (issue 16 acceptance, short phases)', () => {
  it('serves 8 normal clients without a failure through all three attacks, under an open-file limit of 1024, RSS within 2x idle', async () => {
    const lines: string[] = [];
    const result = await runAttackLoad({ phaseMs: 1500, fdLimit: 1024, settleMs: 0, warmup: 50, log: (l) => lines.push(l) });
    expect({ failures: result.failureSamples, count: result.normalFailures }).toEqual({ failures: [], count: 0 });
    expect(result.normalOk).toBeGreaterThan(0);
    expect(result.peakRatio).toBeLessThanOrEqual(2);
    // Health answers at once after the attacks (it took 39.5 s after the pipelining attack before).
    expect(result.liveMs).toBeLessThan(1000);
  }, 120_000);
});

import { IdleCollector } from './idle-collector';

const MB = 1024 * 1024;

/** A collector over a made-up count of array buffer bytes; a collection drops it to `left`. */
function setup(start: number, left = start) {
  const state = { bytes: start, collections: 0 };
  const collector = new IdleCollector({
    thresholdBytes: 32 * MB,
    intervalMs: 1000,
    sample: () => state.bytes,
    collect: () => {
      state.collections++;
      state.bytes = left;
    },
  });
  return { state, collector };
}

describe('IdleCollector', () => {
  it('collects once a burst is over (the buffers grew past the threshold, then stopped moving), and only once', () => {
    const { state, collector } = setup(10 * MB);
    state.bytes = 60 * MB;
    expect(collector.tick()).toBe(false); // still moving: the burst may go on
    expect(collector.tick()).toBe(true); // quiet, 50 MB over the floor
    expect(state.collections).toBe(1);
    expect(state.bytes).toBe(10 * MB);
    for (let i = 0; i < 5; i++) expect(collector.tick()).toBe(false);
    expect(state.collections).toBe(1);
  });

  it('never collects a server under load (its buffers move between samples) nor one that grew less than the threshold', () => {
    const { state, collector } = setup(10 * MB);
    for (let i = 0; i < 20; i++) {
      state.bytes = (i % 2 === 0 ? 80 : 50) * MB;
      expect(collector.tick()).toBe(false);
    }
    state.bytes = 30 * MB;
    collector.tick();
    expect(collector.tick()).toBe(false);
    expect(state.collections).toBe(0);
  });

  it('counts from what the last collection left: garbage that survives is not collected for again', () => {
    // A collection that frees little (the buffers are live: pooled, in flight) raises the floor.
    const { state, collector } = setup(10 * MB, 55 * MB);
    state.bytes = 60 * MB;
    collector.tick();
    expect(collector.tick()).toBe(true);
    state.bytes = 70 * MB;
    collector.tick();
    expect(collector.tick()).toBe(false);
    expect(state.collections).toBe(1);
  });

  it("runs V8's full collection when none is given, and its timer never keeps the process alive", () => {
    let sampled = 0;
    const collector = new IdleCollector({ thresholdBytes: MB, intervalMs: 60_000, sample: () => (sampled++ === 0 ? 0 : 64 * MB) });
    // Garbage the collection frees: 8 MiB of unreachable buffers.
    for (let i = 0; i < 8; i++) new Uint8Array(MB).fill(i);
    const before = process.memoryUsage().arrayBuffers;
    collector.tick();
    expect(collector.tick()).toBe(true);
    expect(collector.collections).toBe(1);
    expect(process.memoryUsage().arrayBuffers).toBeLessThanOrEqual(before - 8 * MB);
    collector.start();
    collector.stop();
  });
});

import * as fs from 'node:fs';
import { loadNativeAddon, nativeAddonPath } from '@nereid/core';
import { IdleCollector } from './idle-collector';

const MB = 1024 * 1024;

/** A collector over a made-up count of array buffer bytes; a collection drops it to `left`. */
function setup(start: number, left = start) {
  const state = { bytes: start, collections: 0, trims: 0, rss: 200 * MB, cpuMs: 0 };
  const collector = new IdleCollector({
    thresholdBytes: 32 * MB,
    intervalMs: 1000,
    sample: () => state.bytes,
    collect: () => {
      state.collections++;
      state.bytes = left;
    },
    trim: () => {
      // Only ever right after a collection.
      expect(state.trims).toBe(state.collections - 1);
      state.trims++;
      state.rss = 200 * MB;
      return true;
    },
    rss: () => state.rss,
    cpuMs: () => state.cpuMs,
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
    // The trim follows once the server has been idle for three samples (the collection's among them).
    expect(state.trims).toBe(0);
    expect(collector.tick()).toBe(false);
    expect(state.trims).toBe(0);
    expect(collector.tick()).toBe(false);
    expect(state.trims).toBe(1);
    expect(collector.trims).toBe(1);
    expect(collector.lastTrimMs).toBeGreaterThanOrEqual(0);
    for (let i = 0; i < 5; i++) expect(collector.tick()).toBe(false);
    expect(state.collections).toBe(1);
    expect(state.trims).toBe(1);
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
    // No trim on a server under load either: it runs only after an idle collection.
    expect(state.trims).toBe(0);
  });

  it('trims a quiet server whose RSS grew past the threshold without a collection (V8 collected the garbage itself), once', () => {
    const state = { bytes: 10 * MB, rss: 200 * MB, trims: 0, collections: 0 };
    const collector = new IdleCollector({
      thresholdBytes: 32 * MB,
      intervalMs: 1000,
      sample: () => state.bytes,
      collect: () => state.collections++,
      // A trim that finds nothing to return: RSS stays.
      trim: () => (state.trims++, false),
      rss: () => state.rss,
      cpuMs: () => 0,
    });
    collector.tick();
    state.rss = 300 * MB; // the heap and external memory did not grow: nothing for a collection to do
    for (let i = 0; i < 3; i++) expect(collector.tick()).toBe(false);
    expect(state.trims).toBe(1);
    expect(state.collections).toBe(0);
    // RSS after that trim is the new mark: no trim again for it.
    for (let i = 0; i < 5; i++) collector.tick();
    expect(state.trims).toBe(1);
    // Nor while busy, whatever RSS does.
    state.rss = 400 * MB;
    for (let i = 0; i < 6; i++) {
      state.bytes = (i % 2 === 0 ? 30 : 15) * MB;
      collector.tick();
    }
    expect(state.trims).toBe(1);
    expect(state.collections).toBe(0);
  });

  it('trims only once the server uses under a tenth of a core: tensors in shared memory move RSS, not the samples', () => {
    const { state, collector } = setup(10 * MB);
    state.bytes = 60 * MB;
    collector.tick();
    expect(collector.tick()).toBe(true);
    // Busy (onnxruntime's threads, shared-memory copies): the trim waits, RSS growing or not.
    for (let i = 0; i < 5; i++) {
      state.cpuMs += 600;
      state.rss += 40 * MB;
      collector.tick();
    }
    expect(state.trims).toBe(0);
    // Idle for three samples: the trim that was due runs then, and only once.
    for (let i = 0; i < 2; i++) {
      state.cpuMs += 20;
      collector.tick();
    }
    expect(state.trims).toBe(0);
    state.cpuMs += 20;
    collector.tick();
    expect(state.trims).toBe(1);
    state.cpuMs += 20;
    collector.tick();
    expect(state.trims).toBe(1);
  });

  it('drops the trim when the server is busy again by the next sample', () => {
    const { state, collector } = setup(10 * MB);
    state.bytes = 60 * MB;
    collector.tick();
    expect(collector.tick()).toBe(true);
    state.bytes = 40 * MB; // a new burst began
    expect(collector.tick()).toBe(false);
    expect(collector.tick()).toBe(false);
    expect(state.trims).toBe(0);
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

  it("runs V8's full collection when none is given, and its timer never keeps the process alive", async () => {
    let sampled = 0;
    const collector = new IdleCollector({ thresholdBytes: MB, intervalMs: 60_000, sample: () => (sampled++ === 0 ? 0 : 64 * MB) });
    // Garbage the collection frees: 8 MiB of unreachable buffers.
    for (let i = 0; i < 8; i++) new Uint8Array(MB).fill(i);
    const before = process.memoryUsage().arrayBuffers;
    collector.tick();
    expect(collector.tick()).toBe(true);
    expect(collector.collections).toBe(1);
    // V8 sweeps array buffers on a background thread: on a busy machine the count falls a little later.
    for (let i = 0; i < 50 && process.memoryUsage().arrayBuffers > before - 8 * MB; i++) await new Promise((r) => setTimeout(r, 20));
    expect(process.memoryUsage().arrayBuffers).toBeLessThanOrEqual(before - 8 * MB);
    collector.start();
    collector.stop();
  });

  it('trims nothing with trim: null (a collection alone)', () => {
    let sampled = 0;
    const collector = new IdleCollector({ thresholdBytes: MB, intervalMs: 1000, sample: () => (sampled++ === 0 ? 0 : 64 * MB), collect: () => {}, trim: null });
    collector.tick();
    expect(collector.tick()).toBe(true);
    collector.tick();
    expect(collector.trims).toBe(0);
  });

  it('never throws out of its timer: a sample that fails (EMFILE reading /proc, every descriptor taken) is skipped (issue 16)', async () => {
    let calls = 0;
    const emfile = Object.assign(new Error('EMFILE: too many open files, open \'/proc/self/status\''), { code: 'EMFILE' });
    const collector = new IdleCollector({
      thresholdBytes: MB,
      intervalMs: 5,
      sample: () => {
        if (calls++ === 0) return 0;
        throw emfile;
      },
      trim: null,
      cpuMs: () => 0,
    });
    expect(() => collector.tick()).toThrow('EMFILE');
    expect(collector.safeTick()).toBe(false);
    // The timer runs safeTick: a throw there would be uncaught in this process and fail the run.
    collector.start();
    // Three ticks of 5 ms (longer on a busy machine: up to 2 s).
    for (let waited = 0; collector.failedSamples < 3 && waited < 2000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
    collector.stop();
    expect(collector.failedSamples).toBeGreaterThan(2);
  });

  // The defect this addon fixes: after a burst, glibc kept the freed buffers resident (their heap's top
  // pinned by small live allocations made in between), and a full collection alone did not lower RSS.
  const glibc = Boolean((process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime);
  const built = fs.existsSync(nativeAddonPath('malloc-trim')!) && glibc;
  (built ? it : it.skip)('returns the freed heap to the system with native/malloc-trim (RSS falls after the collection)', async () => {
    expect(loadNativeAddon('malloc-trim')).toBeDefined();
    const pins: Buffer[] = [];
    let garbage: Buffer[] | undefined = [];
    // 96 MiB of 64 KiB buffers (the size of a socket read) from glibc's heap, small live ones between them.
    for (let i = 0; i < 1536; i++) {
      garbage.push(Buffer.alloc(64 * 1024, 1));
      if (i % 16 === 0) pins.push(Buffer.alloc(200, 2));
    }
    let sampled = 0;
    // Idle by its CPU whatever else this test process does meanwhile.
    const collector = new IdleCollector({ thresholdBytes: MB, intervalMs: 60_000, sample: () => (sampled++ === 0 ? 0 : 96 * MB), cpuMs: () => 0 });
    collector.tick();
    garbage = undefined;
    const before = process.memoryUsage().rss;
    expect(collector.tick()).toBe(true);
    // Two samples later (two seconds in the server): V8 has freed the buffers' memory by then.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    collector.tick();
    collector.tick();
    expect(collector.trims).toBe(1);
    const freed = before - process.memoryUsage().rss;
    // Most of the 96 MiB goes back (the rest of the process may grow a little meanwhile).
    expect(freed).toBeGreaterThan(48 * MB);
    expect(pins.length).toBe(96);
  });
});

import { InstanceLane } from './instance-lane';

/** A task that runs until `finish()` is called. */
function task(log: string[], name: string): { run: () => Promise<void>; finish: () => void } {
  let finish!: () => void;
  const done = new Promise<void>((r) => (finish = r));
  return {
    run: () => {
      log.push(`start ${name}`);
      return done.then(() => void log.push(`end ${name}`));
    },
    finish: () => finish(),
  };
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('InstanceLane', () => {
  it('runs at most `depth` tasks at once and starts the waiting ones in order as running ones end', async () => {
    const log: string[] = [];
    const lane = new InstanceLane(2);
    const tasks = ['a', 'b', 'c', 'd', 'e'].map((n) => task(log, n));
    const settled = tasks.map((t) => lane.run(t.run));
    expect(log).toEqual(['start a', 'start b']);
    expect(lane.load).toBe(5);

    tasks[1].finish();
    await turn();
    expect(log).toEqual(['start a', 'start b', 'end b', 'start c']);
    // Two end in one turn: both waiting tasks start in that same turn.
    tasks[0].finish();
    tasks[2].finish();
    await turn();
    expect(log.slice(4)).toEqual(['end a', 'end c', 'start d', 'start e']);
    tasks[3].finish();
    tasks[4].finish();
    await Promise.all(settled);
    expect(lane.load).toBe(0);
  });

  it("settles each run as its task does, a failing task's too, and frees its place", async () => {
    const lane = new InstanceLane(1);
    const failing = lane.run(() => Promise.reject(new Error('boom')));
    const throwing = lane.run(() => {
      throw new Error('sync boom');
    });
    const ok = lane.run(() => Promise.resolve());
    await expect(failing).rejects.toThrow('boom');
    await expect(throwing).rejects.toThrow('sync boom');
    await expect(ok).resolves.toBeUndefined();
    expect(lane.load).toBe(0);
  });

  it('says when nothing runs or waits any more', async () => {
    const log: string[] = [];
    const lane = new InstanceLane(1);
    await lane.drained(); // idle: at once
    const [a, b] = [task(log, 'a'), task(log, 'b')];
    void lane.run(a.run);
    void lane.run(b.run);
    let drained = false;
    void lane.drained().then(() => (drained = true));
    a.finish();
    await turn();
    expect(drained).toBe(false);
    b.finish();
    await turn();
    expect(drained).toBe(true);
    expect(log).toEqual(['start a', 'end a', 'start b', 'end b']);
  });
});

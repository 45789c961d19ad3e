import { FakeClock } from './clock';
import { DeadlineTimer } from './deadline-timer';

describe('DeadlineTimer', () => {
  it('fires once at the time it is armed for', () => {
    const clock = new FakeClock();
    const fired: number[] = [];
    const timer = new DeadlineTimer(clock, () => fired.push(clock.now()));
    timer.arm(10);
    clock.advance(9);
    expect(fired).toEqual([]);
    clock.advance(1);
    expect(fired).toEqual([10]);
    clock.advance(100);
    expect(fired).toEqual([10]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('keeps one timer: the same time keeps it, another time replaces it, Infinity clears it', () => {
    const clock = new FakeClock();
    const fired: number[] = [];
    const timer = new DeadlineTimer(clock, () => fired.push(clock.now()));
    timer.arm(10);
    timer.arm(10);
    expect(clock.pendingTimers).toBe(1);
    timer.arm(5);
    expect(clock.pendingTimers).toBe(1);
    clock.advance(20);
    expect(fired).toEqual([5]);
    timer.arm(30);
    timer.clear();
    expect(clock.pendingTimers).toBe(0);
    clock.advance(20);
    expect(fired).toEqual([5]);
  });

  it('may be armed again from its own callback', () => {
    const clock = new FakeClock();
    const fired: number[] = [];
    const timer = new DeadlineTimer(clock, () => {
      fired.push(clock.now());
      if (fired.length < 3) timer.arm(clock.now() + 5);
    });
    timer.arm(5);
    clock.advance(100);
    expect(fired).toEqual([5, 10, 15]);
  });
});

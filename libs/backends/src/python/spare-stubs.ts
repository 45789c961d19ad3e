import { MSG } from './frames';
import type { StubLaunch, StubProcess } from './stub-process';

interface Spare {
  proc: StubProcess;
  timer: NodeJS.Timeout;
}

/**
 * Stubs left by auto-complete (python started, the model file imported), kept by model file until
 * the model's first instance takes one over. A spare nobody takes within `timeoutMs` is finalized.
 *
 * Ownership moves in one step: `take` removes the spare and disarms its release timer together, so
 * a stub that now serves an instance is never finalized behind that instance's back.
 */
export class SpareStubs {
  private readonly spares = new Map<string, Spare>();

  constructor(private readonly timeoutMs: number) {}

  /** Keeps `proc` for the first instance of `modelFile`; a spare already kept for it is finalized. */
  park(modelFile: string, proc: StubProcess): void {
    this.finalize(modelFile);
    proc.setRef(false);
    const timer = setTimeout(() => this.finalize(modelFile, proc), this.timeoutMs);
    timer.unref();
    this.spares.set(modelFile, { proc, timer });
  }

  /**
   * Takes the spare of `modelFile` over (its release disarmed) when it is alive and runs with the
   * same interpreter and environment as `launch`; any other spare of it is finalized.
   */
  take(modelFile: string, launch: StubLaunch): StubProcess | undefined {
    const spare = this.remove(modelFile);
    if (!spare) return undefined;
    if (spare.proc.isAlive && JSON.stringify(spare.proc.launch) === JSON.stringify(launch)) return spare.proc;
    spare.proc.send(MSG.FINALIZE, {});
    return undefined;
  }

  /** Finalizes the spare of `modelFile` (only when it is still `only`, where given). */
  private finalize(modelFile: string, only?: StubProcess): void {
    if (only && this.spares.get(modelFile)?.proc !== only) return;
    this.remove(modelFile)?.proc.send(MSG.FINALIZE, {});
  }

  /** Removes the spare of `modelFile` from the keeping and disarms its release. */
  private remove(modelFile: string): Spare | undefined {
    const spare = this.spares.get(modelFile);
    if (!spare) return undefined;
    this.spares.delete(modelFile);
    clearTimeout(spare.timer);
    return spare;
  }
}

/** The stop() promise of a scheduler: created on the first call, resolved once work has drained. */
export class StopLatch {
  private promise: Promise<void> | undefined;
  private resolve: (() => void) | undefined;

  get stopping(): boolean {
    return this.promise !== undefined;
  }

  start(): Promise<void> {
    if (this.promise === undefined) {
      this.promise = new Promise<void>((r) => (this.resolve = r));
    }
    return this.promise;
  }

  /** Resolves the stop() promise when stopping and `idle` is true. */
  check(idle: boolean): void {
    if (this.resolve !== undefined && idle) {
      this.resolve();
      this.resolve = undefined;
    }
  }
}

import type { ExecutionStats, InferenceError, InferenceResponse, ResponseSink } from '@nereid/protocol';

/**
 * Wraps a sink and remembers whether the request is complete (a final response or a failure).
 * Calls after completion are dropped, so a client never sees two endings for one request.
 */
export class GuardedSink implements ResponseSink {
  private finished = false;

  constructor(private readonly inner: ResponseSink) {}

  get done(): boolean {
    return this.finished;
  }

  send(response: InferenceResponse | undefined, final: boolean): void {
    if (this.finished) return;
    if (final) this.finished = true;
    this.inner.send(response, final);
  }

  fail(error: InferenceError): void {
    if (this.finished) return;
    this.finished = true;
    this.inner.fail(error);
  }

  /** Passed on even after completion: statistics may follow the final response. */
  executed(stats: ExecutionStats): void {
    this.inner.executed?.(stats);
  }
}

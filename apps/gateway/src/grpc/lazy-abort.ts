import { setAbortSource, type InferenceRequest } from '@nereid/protocol';

/**
 * An abort signal created only when someone reads it. Reading `AbortController#signal` costs a few
 * microseconds (it builds an EventTarget), which shows on the unary ModelInfer path where almost no
 * call is ever cancelled.
 */
export class LazyAbort {
  private controller?: AbortController;
  private wasAborted = false;
  /** Called once on abort, beside the signal's listeners (addCancelListener: no signal built for them). */
  private listeners?: Array<() => void>;

  get aborted(): boolean {
    return this.wasAborted;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.wasAborted) this.controller.abort();
    }
    return this.controller.signal;
  }

  abort(): void {
    if (this.wasAborted) return;
    this.wasAborted = true;
    this.controller?.abort();
    const listeners = this.listeners;
    this.listeners = undefined;
    for (const l of listeners ?? []) l();
  }

  listen(listener: () => void): void {
    if (this.wasAborted) return;
    (this.listeners ??= []).push(listener);
  }

  unlisten(listener: () => void): void {
    const at = this.listeners?.indexOf(listener) ?? -1;
    if (at >= 0) this.listeners!.splice(at, 1);
  }

  /**
   * Makes `request.signal` this lazy signal. Requests from `newInferenceRequest` read it through
   * their prototype; any other request object gets the signal built now.
   */
  attach(request: InferenceRequest): void {
    if (!setAbortSource(request, this)) request.signal = this.signal;
  }
}

import { setAbortSource, type InferenceRequest } from '@nereid/protocol';

/**
 * An abort signal created only when someone reads it. Reading `AbortController#signal` costs a few
 * microseconds (it builds an EventTarget), which shows on the unary ModelInfer path where almost no
 * call is ever cancelled.
 */
export class LazyAbort {
  private controller?: AbortController;
  private wasAborted = false;

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
    this.wasAborted = true;
    this.controller?.abort();
  }

  /**
   * Makes `request.signal` this lazy signal. Requests from `newInferenceRequest` read it through
   * their prototype; any other request object gets the signal built now.
   */
  attach(request: InferenceRequest): void {
    if (!setAbortSource(request, this)) request.signal = this.signal;
  }
}

import type { ExecutionStats, InferenceError, InferenceResponse, ResponseSink } from '@nereid/protocol';

type Event = { kind: 'send'; response: InferenceResponse | undefined; final: boolean } | { kind: 'fail'; error: InferenceError };

/**
 * `preserve_ordering`: responses leave in the order the requests arrived. The oldest unfinished
 * request's responses pass straight through; later requests' responses are buffered until every
 * earlier request has finished (final response or failure).
 */
export class OrderedDelivery {
  private readonly open: OrderedSink[] = [];

  /** A sink for the next request in arrival order. */
  wrap(inner: ResponseSink): ResponseSink {
    const sink = new OrderedSink(inner, () => this.release());
    this.open.push(sink);
    if (this.open.length === 1) sink.becomeHead();
    return sink;
  }

  /** Number of requests not yet completely delivered. */
  get openCount(): number {
    return this.open.length;
  }

  private release(): void {
    while (this.open.length > 0 && this.open[0].finished) {
      this.open.shift();
      if (this.open.length > 0) this.open[0].becomeHead();
    }
  }
}

class OrderedSink implements ResponseSink {
  finished = false;
  private head = false;
  private ended = false;
  private readonly buffered: Event[] = [];

  constructor(
    private readonly inner: ResponseSink,
    private readonly onFinished: () => void,
  ) {}

  send(response: InferenceResponse | undefined, final: boolean): void {
    this.push({ kind: 'send', response, final });
  }

  fail(error: InferenceError): void {
    this.push({ kind: 'fail', error });
  }

  /** Not held back: statistics say nothing about response order. */
  executed(stats: ExecutionStats): void {
    this.inner.executed?.(stats);
  }

  /** Called once this request is the oldest unfinished one: flush what it buffered. */
  becomeHead(): void {
    if (this.head) return;
    this.head = true;
    for (const e of this.buffered.splice(0)) this.deliver(e);
    if (this.ended) this.finish();
  }

  private push(e: Event): void {
    if (this.ended) return;
    this.ended = e.kind === 'fail' || e.final;
    if (this.head) {
      this.deliver(e);
      if (this.ended) this.finish();
    } else {
      this.buffered.push(e);
    }
  }

  private deliver(e: Event): void {
    if (e.kind === 'fail') this.inner.fail(e.error);
    else this.inner.send(e.response, e.final);
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.onFinished();
  }
}

import type { ModelConfig } from '@nereid/model-config';
import type {
  ExecutionItem,
  ExecutionStats,
  InferenceError,
  InferenceRequest,
  InferenceResponse,
  RequestedOutput,
  ResponseSink,
} from '@nereid/protocol';
import type { Tensor } from '@nereid/tensor';
import type { SequenceControls } from './sequence-controls';
import { DerivedRequest } from './derived-request';
import { paddingRequest } from './sequence-request';
import type { ImplicitStates, StateValues } from './sequence-state';

/** The implicit state held by one slot for the sequence that owns it. */
export interface SlotState {
  values: StateValues | undefined;
}

/** A sink for rows nobody waits for (padding): everything sent to it is dropped. */
const DISCARD: ResponseSink = { send: () => undefined, fail: () => undefined };

/**
 * Turns a client's queued request into the row a backend executes (see the shared contract in
 * `SequenceBatchScheduler`): control tensors and input states added to its inputs, the state outputs
 * to its outputs, and a sink that keeps the output states for the sequence's next request and
 * hands the client a response without them.
 */
export class SequenceRows {
  /** Every output of the model by name, for requests that name none (so that states can be added). */
  private readonly allOutputs: RequestedOutput[];

  constructor(
    config: ModelConfig,
    readonly controls: SequenceControls,
    readonly states: ImplicitStates,
  ) {
    this.allOutputs = (config.output ?? []).map((o) => ({ name: o.name ?? '' }));
  }

  /**
   * The row for `item` in a slot whose state is `slot` (reset when the request starts a sequence).
   * `onDone` runs once the request has its final response or has failed.
   */
  row(item: ExecutionItem, slot: SlotState, onDone?: () => void): ExecutionItem {
    const client = item.request;
    if (client.sequenceStart) slot.values = undefined;
    const inputs: Tensor[] = client.inputs.slice();
    this.controls.append(inputs, { start: client.sequenceStart, end: client.sequenceEnd, ready: true }, client.sequenceId);
    if (!this.states.any) {
      const sink = onDone === undefined ? item.sink : new RowSink(item.sink, onDone);
      return { request: new DerivedRequest(client, client.modelName, client.modelVersion, inputs, client.outputs), sink, enqueuedAt: item.enqueuedAt };
    }
    this.states.append(inputs, slot.values);
    const outputs = this.states.requestOutputs(client.outputs ?? this.allOutputs, (name) => ({ name }));
    const keep = client.outputs?.some((o) => this.states.outputNames.has(o.name)) ? new Set(client.outputs.map((o) => o.name)) : undefined;
    const capture = client.sequenceEnd ? undefined : slot;
    const sink = new StateSink(item.sink, this.states, capture, keep, onDone);
    return { request: new DerivedRequest(client, client.modelName, client.modelVersion, inputs, outputs), sink, enqueuedAt: item.enqueuedAt };
  }

  /** Whether `request`, queued in a slot whose state is `slot`, can share a batch with `row`'s states. */
  statesFit(row: ExecutionItem, request: InferenceRequest, slot: SlotState): boolean {
    return !this.states.any || this.states.fits(row.request.inputs, request.sequenceStart ? undefined : slot.values);
  }

  /** A READY=false row shaped like `live`, for an empty slot of a direct batch; `zeros` is shared by a batch's rows. */
  padding(live: ExecutionItem, zeros?: Map<Tensor, Tensor>): ExecutionItem {
    return { request: paddingRequest(live.request, this.controls, zeros), sink: DISCARD };
  }
}

/** Passes everything on and reports, once, the end of the request. */
class RowSink implements ResponseSink {
  protected ended = false;

  constructor(
    private readonly inner: ResponseSink,
    private readonly onDone: (() => void) | undefined,
  ) {}

  send(response: InferenceResponse | undefined, final: boolean): void {
    this.inner.send(this.pass(response), final);
    if (final) this.end();
  }

  fail(error: InferenceError): void {
    this.inner.fail(error);
    this.end();
  }

  executed(stats: ExecutionStats): void {
    this.inner.executed?.(stats);
  }

  /** What the client gets of `response`. */
  protected pass(response: InferenceResponse | undefined): InferenceResponse | undefined {
    return response;
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onDone?.();
  }
}

/**
 * Takes the output states out of every response of a row: they become the slot's state (unless
 * `slot` is undefined: the sequence has ended) and the client gets the response without them.
 */
class StateSink extends RowSink {
  constructor(
    inner: ResponseSink,
    private readonly states: ImplicitStates,
    private readonly slot: SlotState | undefined,
    private readonly keep: ReadonlySet<string> | undefined,
    onDone: (() => void) | undefined,
  ) {
    super(inner, onDone);
  }

  protected override pass(response: InferenceResponse | undefined): InferenceResponse | undefined {
    if (response === undefined || this.ended) return response;
    const captured = this.states.capture(response, this.slot?.values, this.keep);
    if (this.slot !== undefined && captured.states !== undefined) this.slot.values = captured.states;
    return captured.response;
  }
}

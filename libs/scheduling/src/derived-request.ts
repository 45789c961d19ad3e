import { isCancelled, type InferenceRequest, type Parameters, type RequestedOutput, type RequestTrace } from '@nereid/protocol';
import type { Tensor } from '@nereid/tensor';

/**
 * A request a scheduler makes from a client's request: an ensemble step, or a sequence batch row
 * with its control and state tensors added. It keeps the client's id, parameters, correlation id,
 * flags, priority and timeout, and takes its own model, inputs and outputs; the client's request
 * object is never changed. A class, so that every such request has one shape (an object literal
 * with accessors costs microseconds to build and leaves a slow dictionary object behind). Whether
 * the client has gone away is read from the client's request each time, as its signal may be built
 * only when read.
 */
export class DerivedRequest implements InferenceRequest {
  readonly id: string;
  readonly parameters: Parameters;
  readonly sequenceId: bigint | string;
  readonly sequenceStart: boolean;
  readonly sequenceEnd: boolean;
  readonly priority: number;
  readonly timeoutUs: number;

  constructor(
    /** The client's request this one was made from. */
    readonly client: InferenceRequest,
    readonly modelName: string,
    readonly modelVersion: number,
    readonly inputs: Tensor[],
    readonly outputs: RequestedOutput[] | undefined,
  ) {
    this.id = client.id;
    this.parameters = client.parameters;
    this.sequenceId = client.sequenceId;
    this.sequenceStart = client.sequenceStart;
    this.sequenceEnd = client.sequenceEnd;
    this.priority = client.priority;
    this.timeoutUs = client.timeoutUs;
  }

  get signal(): AbortSignal | undefined {
    return this.client.signal;
  }

  get cancelled(): boolean {
    return isCancelled(this.client);
  }

  /** The id the log gave the client's request (one without an id of its own): the steps' log lines carry it too. */
  get logId(): string | undefined {
    return this.client.logId;
  }

  set logId(id: string | undefined) {
    this.client.logId = id;
  }

  /** A traced client request's steps are traced as its children. */
  get parentTrace(): RequestTrace | undefined {
    return this.client.trace;
  }
}

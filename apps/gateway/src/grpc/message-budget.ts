import {
  Metadata,
  ServerInterceptingCall,
  status,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
  type ServiceDefinition,
} from '@grpc/grpc-js';
import type { BodyBudget } from '../http/body-budget';

/**
 * gRPC request messages in the server's budget of request bytes held at once (the HTTP bodies'
 * budget, `--http-max-inflight-body-bytes`, one budget for both front doors).
 *
 * A message is charged when its 5-byte gRPC prefix announces its length, before its bytes are
 * buffered, as an HTTP body with a Content-Length is: grpc-js collects a message whole before any
 * handler or interceptor sees it, so counting messages once read would leave every message being
 * received (up to --grpc-max-message-size each, on every call at once) outside the budget. One that
 * does not fit ends its call with RESOURCE_EXHAUSTED and the budget's words, through grpc-js's own
 * path for a message over the size limit; its bytes are never read (a stream ends the same way: the
 * request cannot be read, so it cannot be answered by id). A small message (up to 64 KiB) may use
 * the budget's reserve (BodyBudget.chargeHeld).
 *
 * A unary call's charge is given back when the call ends; a ModelStreamInfer request's when its
 * final response is sent (stream-infer.ts, `releaseOf`), and whatever a call still holds when its
 * HTTP/2 stream closes. This reads the framing where grpc-js decodes it: the call's `decoder` and
 * `stream` (internals of grpc-js 1.x's BaseServerInterceptingCall, found on the first interceptor's
 * call); where they are missing, messages are charged when they are delivered whole instead, by the
 * size their deserializer saw (`countingDeserializers`).
 */

const RELEASES = new WeakMap<object, () => void>();
const BYTES = new WeakMap<object, number>();

/** A copy of `service` whose request deserializers record the size of every message they decode. */
export function countingDeserializers(service: ServiceDefinition): ServiceDefinition {
  const entries = Object.entries(service).map(([name, method]) => {
    const deserialize = method.requestDeserialize;
    const counting = (bytes: Buffer): unknown => {
      const message = deserialize(bytes) as unknown;
      if (typeof message === 'object' && message !== null) BYTES.set(message, bytes.length);
      return message;
    };
    return [name, { ...method, requestDeserialize: counting }];
  });
  return Object.fromEntries(entries) as ServiceDefinition;
}

/** The function that gives back a delivered request message's charge (a no-op for one not charged). */
export function releaseOf(message: unknown): () => void {
  return (typeof message === 'object' && message !== null && RELEASES.get(message)) || (() => undefined);
}

/** The status of a message refused for want of room. */
export function exhaustedStatus(budget: BodyBudget): { code: status; details: string; metadata: Metadata } {
  return { code: status.RESOURCE_EXHAUSTED, details: budget.exhaustedMessage, metadata: new Metadata() };
}

/** Calls whose messages were charged from their framing, and calls charged only once a message was whole (grpc-js internals missing). */
export const budgetCalls = { framed: 0, whole: 0 };

/** What grpc-js's BaseServerInterceptingCall holds that the budget reads (not part of its API). */
interface CallInternals {
  decoder?: { write?: (data: Buffer) => Buffer[] };
  stream?: { once?: (event: 'close', listener: () => void) => unknown };
}

/** Follows gRPC's message framing (1 flag byte, 4 bytes of big-endian length, the message) over a call's data frames. */
export class MessageFraming {
  private readonly prefix = Buffer.alloc(5);
  private prefixHave = 0;
  private remaining = 0;

  /** `onMessage(length)` is called when a message's prefix is complete, before its bytes. */
  constructor(private readonly onMessage: (length: number) => void) {}

  write(data: Buffer): void {
    let at = 0;
    while (at < data.length) {
      if (this.remaining > 0) {
        const take = Math.min(this.remaining, data.length - at);
        this.remaining -= take;
        at += take;
        continue;
      }
      this.prefix[this.prefixHave++] = data[at++];
      if (this.prefixHave < 5) continue;
      this.prefixHave = 0;
      this.remaining = this.prefix.readUInt32BE(1);
      this.onMessage(this.remaining);
    }
  }
}

/** The charges of one call: messages charged (in order) and not yet delivered, and those delivered. */
class CallCharges {
  private readonly waiting: (() => void)[] = [];
  private readonly held = new Set<() => void>();

  constructor(private readonly budget: BodyBudget) {}

  /** Charges a message of `bytes`; false when it does not fit. */
  charge(bytes: number): boolean {
    const give = this.budget.chargeHeld(bytes);
    if (!give) return false;
    const release = (): void => {
      this.held.delete(release);
      give();
    };
    this.waiting.push(release);
    this.held.add(release);
    return true;
  }

  /** The release of the next message delivered (charged when it arrived). */
  deliver(): (() => void) | undefined {
    return this.waiting.shift();
  }

  releaseAll(): void {
    for (const release of [...this.held]) release();
    this.waiting.length = 0;
  }
}

/**
 * Charges every request message to `budget` as it starts to arrive (see the file's comment). The
 * methods in `perRequest` give back each message's charge themselves (`releaseOf`); for the others
 * the call's charges go when it ends. Must be the first interceptor, so that it sees grpc-js's call.
 */
export function budgetInterceptor(budget: BodyBudget, perRequest: ReadonlySet<string>): ServerInterceptor {
  return (method, call: ServerInterceptingCallInterface) => {
    const charges = new CallCharges(budget);
    const internals = call as unknown as CallInternals;
    const decoder = internals.decoder;
    const framed = typeof decoder?.write === 'function' && typeof internals.stream?.once === 'function';
    if (framed) budgetCalls.framed++;
    else budgetCalls.whole++;
    if (framed) {
      let refused = false;
      const framing = new MessageFraming((length) => {
        if (charges.charge(length + 5)) return;
        refused = true;
        // Thrown inside grpc-js's decoder: the call ends RESOURCE_EXHAUSTED with these words.
        throw new Error(budget.exhaustedMessage);
      });
      const write = decoder!.write!.bind(decoder);
      decoder!.write = (data: Buffer) => {
        // After a refusal nothing more of the call is decoded (grpc-js stops feeding it anyway).
        if (refused) return [];
        framing.write(data);
        return write(data);
      };
      internals.stream!.once!('close', () => charges.releaseAll());
    }
    const keepPerRequest = perRequest.has(method.path);
    return new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMessage: (message, nextMessage) => {
            let release = charges.deliver();
            if (!framed) {
              // No framing to read: the message is charged now that it is whole.
              const bytes = typeof message === 'object' && message !== null ? (BYTES.get(message) ?? 0) : 0;
              if (!charges.charge(bytes + 5)) {
                call.sendStatus(exhaustedStatus(budget));
                return;
              }
              release = charges.deliver();
            }
            if (release && keepPerRequest && typeof message === 'object' && message !== null) RELEASES.set(message, release);
            nextMessage(message);
          },
          onCancel: () => charges.releaseAll(),
        }),
      sendStatus: (callStatus, next) => {
        if (!keepPerRequest) charges.releaseAll();
        next(callStatus);
      },
    });
  };
}

import {
  Metadata,
  ServerInterceptingCall,
  status,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
  type ServiceDefinition,
} from '@grpc/grpc-js';
import { constants as http2 } from 'node:http2';
import type { BodyBudget, HeldCharge } from '../http/body-budget';
import { MessageFraming } from './message-framing';
import { inflateCharged } from './message-inflate';
import { decodedCostOf, INFER_METHOD_PATHS } from './scanned-deserializers';

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
 * the budget's reserve (BodyBudget.holdCharge).
 *
 * A compressed message (grpc-encoding gzip or deflate) is charged its framed length at its prefix and
 * then what it inflates to, chunk by chunk, as grpc-js's call inflates it (`decompressMessage`,
 * replaced by message-inflate.ts's): one that does not fit ends its call RESOURCE_EXHAUSTED before it
 * has inflated more than the budget allows (issue 16).
 *
 * A message larger than the largest message received (`maxMessageBytes`, --grpc-max-message-size or
 * --http-max-input-size) is not charged: grpc-js refuses it at its prefix, RESOURCE_EXHAUSTED. One
 * that has begun and not fully arrived within `messageTimeoutMs` (--http-request-timeout-secs) ends
 * its call DEADLINE_EXCEEDED and gives back the call's charges: a client that announced a large
 * message and sent nothing more held its charge until it disconnected (issue 16).
 *
 * A unary call's charge is given back when the call ends; a ModelStreamInfer request's when its
 * final response is sent (stream-infer.ts, `releaseOf`), and whatever a call still holds when its
 * HTTP/2 stream closes. This reads the framing where grpc-js decodes it: the call's `decoder` and
 * `stream` (internals of grpc-js 1.x's BaseServerInterceptingCall, found on the first interceptor's
 * call); where they are missing, messages are charged when they are delivered whole instead, by the
 * size their deserializer saw (`countingDeserializers`), inflated size included.
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
  stream?: {
    once?: (event: 'close', listener: () => void) => unknown;
    on?: (event: 'resume', listener: () => void) => unknown;
    isPaused?: () => boolean;
    close?: (code: number) => void;
    closed?: boolean;
    writableEnded?: boolean;
  };
  decompressMessage?: (message: Buffer, encoding: string) => Buffer | Promise<Buffer>;
}

/** The charges of one call: messages charged (in order) and not yet delivered, and those delivered. */
class CallCharges {
  /** Charged at their prefix, not yet through grpc-js's decompressMessage (in order). */
  private readonly undecoded: HeldCharge[] = [];
  /** Charged, not yet delivered to the handler (in order). */
  private readonly undelivered: HeldCharge[] = [];
  private readonly held = new Set<HeldCharge>();

  constructor(private readonly budget: BodyBudget) {}

  /** Charges a message of `bytes`; false when it does not fit. */
  charge(bytes: number): boolean {
    const charge = this.budget.holdCharge();
    if (!charge.grow(bytes)) return false;
    this.undecoded.push(charge);
    this.undelivered.push(charge);
    this.held.add(charge);
    return true;
  }

  /** The charge of the next message grpc-js decodes (decodes are called in the order messages arrive). */
  decoding(): HeldCharge | undefined {
    return this.undecoded.shift();
  }

  /** The release of the next message delivered (charged when it arrived). */
  deliver(): (() => void) | undefined {
    const charge = this.undelivered.shift();
    if (!charge) return undefined;
    return () => {
      this.held.delete(charge);
      charge.release();
    };
  }

  releaseAll(): void {
    for (const charge of this.held) charge.release();
    this.held.clear();
    this.undecoded.length = 0;
    this.undelivered.length = 0;
  }
}

/** Bounds of the messages of one call. */
export interface MessageLimits {
  /** grpc-js's largest message received (grpc.max_receive_message_length; -1: none). */
  maxMessageBytes: number;
  /** Time a message has to arrive whole once it has begun (0: none). */
  messageTimeoutMs: number;
}

/** The status of a message that did not arrive in time. */
export function timeoutDetails(ms: number): string {
  return `the request message did not arrive within ${ms / 1000} s (--http-request-timeout-secs)`;
}

/**
 * Charges every request message to `budget` as it starts to arrive (see the file's comment). The
 * methods in `perRequest` give back each message's charge themselves (`releaseOf`); for the others
 * the call's charges go when it ends. Must be the first interceptor, so that it sees grpc-js's call.
 */
export function budgetInterceptor(budget: BodyBudget, perRequest: ReadonlySet<string>, limits: MessageLimits): ServerInterceptor {
  return (method, call: ServerInterceptingCallInterface) => {
    const charges = new CallCharges(budget);
    const internals = call as unknown as CallInternals;
    const decoder = internals.decoder;
    const stream = internals.stream;
    const decompress = internals.decompressMessage;
    const framed = typeof decoder?.write === 'function' && typeof stream?.once === 'function' && typeof decompress === 'function';
    if (framed) budgetCalls.framed++;
    else budgetCalls.whole++;
    if (framed) {
      let refused = false;
      const framing = new MessageFraming((length) => {
        // Over the size limit: grpc-js refuses it at this prefix (RESOURCE_EXHAUSTED), uncharged, and
        // nothing after it is read.
        if (limits.maxMessageBytes !== -1 && length > limits.maxMessageBytes) {
          refused = true;
          return;
        }
        if (charges.charge(length + 5)) return;
        refused = true;
        // Thrown inside grpc-js's decoder: the call ends RESOURCE_EXHAUSTED with these words.
        throw new Error(budget.exhaustedMessage);
      });
      let timer: ReturnType<typeof setTimeout> | undefined;
      let timedMessage = 0;
      const arm = (): void => {
        clearTimeout(timer);
        timedMessage = framing.begun;
        timer = setTimeout(timedOut, limits.messageTimeoutMs);
      };
      const timedOut = (): void => {
        // The server holds reading (grpc-js pauses the stream after each message until the handler
        // wants the next; a ModelStreamInfer whose answers wait unread holds it): the rest of the
        // message waits on the server, not on the client. Its time starts again when reading resumes.
        // (A call refused or answered already is reset whatever the stream's state.)
        if (!refused && !stream!.writableEnded && stream!.isPaused?.() === true) {
          timer = undefined;
          return;
        }
        refused = true;
        charges.releaseAll();
        // A call already ended (grpc-js refused its message at the prefix, say) whose client still
        // holds the stream open is only reset.
        if (!stream!.writableEnded) {
          try {
            call.sendStatus({ code: status.DEADLINE_EXCEEDED, details: timeoutDetails(limits.messageTimeoutMs), metadata: new Metadata() });
          } catch {
            // The stream went meanwhile: nothing to tell.
          }
        }
        // The rest of the message is not wanted: the stream is reset, whatever the client still sends.
        if (!stream!.closed) stream!.close?.(http2.NGHTTP2_CANCEL);
      };
      const write = decoder!.write!.bind(decoder);
      decoder!.write = (data: Buffer) => {
        // After a refusal nothing more of the call is decoded (grpc-js stops feeding it anyway).
        if (refused) return [];
        framing.write(data);
        if (limits.messageTimeoutMs > 0) {
          // One timer per call, for the message under way: set when it begins, cleared once it is whole.
          if (!framing.midMessage) {
            clearTimeout(timer);
            timer = undefined;
          } else if (timer === undefined || timedMessage !== framing.begun) {
            arm();
          }
        }
        return write(data);
      };
      const identity = decompress!.bind(call);
      // A ModelInferRequest is charged what it costs decoded too, once decompressed and before
      // protobufjs decodes it (scanned-deserializers.ts): refused when that does not fit (issue 16).
      const chargeDecoded = (charge: HeldCharge, bytes: Buffer): Buffer => {
        if (charge.grow(decodedCostOf(bytes, limits.maxMessageBytes))) return bytes;
        refused = true;
        charges.releaseAll();
        throw exhaustedStatus(budget);
      };
      const decodesInfer = INFER_METHOD_PATHS.has(method.path);
      internals.decompressMessage = (message: Buffer, encoding: string) => {
        const charge = charges.decoding();
        const counted = decodesInfer ? charge : undefined;
        const compressed = message.length > 0 && message[0] === 1;
        if (!compressed || !charge || (encoding !== 'gzip' && encoding !== 'deflate')) {
          const out = identity(message, encoding);
          if (counted === undefined) return out;
          // A plain message comes back at once: charged without a closure per message.
          return out instanceof Promise ? out.then((bytes) => chargeDecoded(counted, bytes)) : chargeDecoded(counted, out);
        }
        const decoded = counted === undefined ? undefined : (bytes: Buffer) => chargeDecoded(counted, bytes);
        return inflateCharged(message.subarray(5), encoding, charge, limits.maxMessageBytes, budget.exhaustedMessage).catch((refusal: unknown) => {
          // grpc-js ends the call with the refusal: its charges go now, not when its client closes the
          // stream (a client that never half-closes would hold them), and nothing more of it is read.
          refused = true;
          charges.releaseAll();
          throw refusal;
        }).then(decoded);
      };
      if (limits.messageTimeoutMs > 0) {
        // Reading again after a pause: a message under way has its whole time from now.
        stream!.on?.('resume', () => {
          if (!refused && framing.midMessage) arm();
        });
      }
      stream!.once!('close', () => {
        clearTimeout(timer);
        charges.releaseAll();
      });
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
              charges.decoding();
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

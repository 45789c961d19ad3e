import { Metadata, ServerInterceptingCall, status, type ServerInterceptor, type ServiceDefinition } from '@grpc/grpc-js';
import type { BodyBudget } from '../http/body-budget';

/**
 * gRPC request messages in the server's budget of request bytes held at once (the HTTP bodies'
 * budget, `--http-max-inflight-body-bytes`, one budget for both front doors). grpc-js has read a
 * message whole before any handler sees it, so a message that does not fit cannot wait for room (its
 * bytes would stay held while it waited): it is refused at once with RESOURCE_EXHAUSTED and dropped.
 *
 * The size of a message is the length of its serialized bytes, recorded by the service's
 * deserializers (`countingDeserializers`). A message of a unary call is charged as it arrives and
 * released when the call ends (`budgetInterceptor`); a ModelStreamInfer message is charged and
 * released by the stream, per request (stream-infer.ts), since a stream lives on across requests.
 */

const BYTES = new WeakMap<object, number>();

/** The serialized size of a request message that a counting deserializer produced (0 for others). */
export function messageBytes(message: unknown): number {
  return typeof message === 'object' && message !== null ? (BYTES.get(message) ?? 0) : 0;
}

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

/** The status of a message refused for want of room. */
export function exhaustedStatus(budget: BodyBudget): { code: status; details: string; metadata: Metadata } {
  return { code: status.RESOURCE_EXHAUSTED, details: budget.exhaustedMessage, metadata: new Metadata() };
}

/**
 * Charges every request message of a call (except the methods in `perRequest`, which charge their
 * messages themselves) as it arrives; one that does not fit ends the call with RESOURCE_EXHAUSTED.
 * The call's charge is given back when its status is sent or the client cancels it.
 */
export function budgetInterceptor(budget: BodyBudget, perRequest: ReadonlySet<string>): ServerInterceptor {
  return (method, call) => {
    if (perRequest.has(method.path)) return new ServerInterceptingCall(call);
    const releases: (() => void)[] = [];
    const release = (): void => {
      for (const r of releases.splice(0)) r();
    };
    return new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMessage: (message, nextMessage) => {
            const bytes = messageBytes(message);
            const charge = bytes > 0 ? budget.chargeHeld(bytes) : undefined;
            if (bytes > 0 && !charge) {
              release();
              call.sendStatus(exhaustedStatus(budget));
              return;
            }
            if (charge) releases.push(charge);
            nextMessage(message);
          },
          onCancel: release,
        }),
      sendStatus: (callStatus, next) => {
        release();
        next(callStatus);
      },
    });
  };
}

import type { ServerWritableStream, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { InferenceCore } from '@nereid/core';
import { unary } from './unary';

export type ServingStatus = 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';

/** How often Watch re-reads readiness (it reports changes only). */
export const HEALTH_WATCH_INTERVAL_MS = 1000;

/** SERVING when the server is ready (the ServerReady rule), NOT_SERVING otherwise; `service` ignored. */
export function servingStatus(core: InferenceCore): ServingStatus {
  return core.isReady() ? 'SERVING' : 'NOT_SERVING';
}

function watch(core: InferenceCore, call: ServerWritableStream<unknown, { status: ServingStatus }>): void {
  let last: ServingStatus | undefined;
  const tick = (): void => {
    let now: ServingStatus;
    try {
      now = servingStatus(core);
    } catch {
      now = 'UNKNOWN';
    }
    if (now !== last) {
      last = now;
      call.write({ status: now });
    }
  };
  tick();
  const timer = setInterval(tick, HEALTH_WATCH_INTERVAL_MS);
  timer.unref();
  const stop = (): void => clearInterval(timer);
  call.on('cancelled', stop);
  call.on('close', stop);
  call.on('error', stop);
}

/** grpc.health.v1.Health: Check (what Triton serves) and the standard Watch. */
export function healthHandlers(core: InferenceCore): UntypedServiceImplementation {
  return {
    Check: unary(() => ({ status: servingStatus(core) })),
    Watch: (call: ServerWritableStream<unknown, { status: ServingStatus }>) => watch(core, call),
  };
}

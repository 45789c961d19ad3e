import type { SystemSharedMemory } from '@nereid/core';
import type { RequestLog } from './access-log';
import type { TokenStore } from './auth-tokens';
import type { Restriction } from './restrictions';

/** Injection token of the InferenceCore the front doors delegate to. */
export const INFERENCE_CORE = Symbol('INFERENCE_CORE');

/** Injection token of the gateway's options. */
export const GATEWAY_OPTIONS = Symbol('GATEWAY_OPTIONS');

export interface GatewayOptions {
  /** Largest accepted request body in bytes (`--http-max-input-size`). */
  maxInputSize: number;
  /** `--max-output-size`: the most bytes of output data a response carries (output-size.ts); none: DEFAULT_MAX_OUTPUT_SIZE. */
  maxOutputSize?: number;
  /** `--allow-client-shm`. */
  allowClientShm: boolean;
  /** The server's client system shared memory regions (shared with gRPC); none: no region is known. */
  sharedMemory?: SystemSharedMemory;
  /** `--http-restricted-api`: groups that need a header. */
  restrictedApis?: readonly Restriction[];
  /** `--auth-tokens-file`: bearer tokens and the groups each opens. */
  authTokens?: TokenStore;
  /** Request ids on log lines and the access log (`--access-log`); none: no request lines. */
  requestLog?: RequestLog;
}

import type { TokenStore } from './auth-tokens';
import type { Restriction } from './restrictions';

/** Injection token of the InferenceCore the front doors delegate to. */
export const INFERENCE_CORE = Symbol('INFERENCE_CORE');

/** Injection token of the gateway's options. */
export const GATEWAY_OPTIONS = Symbol('GATEWAY_OPTIONS');

export interface GatewayOptions {
  /** Largest accepted request body in bytes (`--http-max-input-size`). */
  maxInputSize: number;
  /** `--allow-client-shm`. */
  allowClientShm: boolean;
  /** `--http-restricted-api`: groups that need a header. */
  restrictedApis?: readonly Restriction[];
  /** `--auth-tokens-file`: bearer tokens and the groups each opens. */
  authTokens?: TokenStore;
}

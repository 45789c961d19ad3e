import { GrpcRequestErrors } from '@nereid/protocol';

/**
 * A gRPC `model_version` / `version` string → the core's version number. "" means the server picks
 * (-1). Anything but a non-negative integer is INVALID_ARG with Triton's words.
 */
export function parseModelVersion(version: string): number {
  if (version === '') return -1;
  const v = /^-?\d+$/.test(version) ? Number(version) : NaN;
  if (!Number.isSafeInteger(v)) throw GrpcRequestErrors.versionNotInteger(version);
  if (v < 0) throw GrpcRequestErrors.versionNegative(version);
  return v;
}

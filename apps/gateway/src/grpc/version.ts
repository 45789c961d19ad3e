import { InferenceError } from '@nereid/protocol';

/**
 * A gRPC `model_version` / `version` string → the core's version number. "" means the server picks
 * (-1). Anything but an integer is INVALID_ARG with Triton's wording.
 */
export function parseModelVersion(version: string): number {
  if (version === '') return -1;
  if (/^-?\d+$/.test(version)) {
    const v = Number(version);
    if (Number.isSafeInteger(v)) return v;
  }
  throw InferenceError.invalidArg(
    `failed to get model version from specified version string '${version}' (details: stoll), ` +
      'version should be an integral value > 0',
  );
}

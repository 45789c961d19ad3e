import type { SharedMemoryUse } from '@nereid/core';
import { InferenceError, type InferenceResponse } from '@nereid/protocol';
import { byteSizeOf } from '@nereid/tensor';

/**
 * `--max-output-size`'s default: 2147483647 bytes (INT32_MAX), the gRPC send limit Triton sets.
 * Triton bounds nothing else; Nereid checks every front door against the one bound.
 */
export const DEFAULT_MAX_OUTPUT_SIZE = 2147483647;

/**
 * Nereid's own bound on the bytes a response carries (`--max-output-size`, Triton has none): the
 * outputs' data as HTTP's binary section and gRPC's `raw_output_contents` carry it (BYTES elements
 * with their 4-byte lengths; HTTP JSON text is larger). Outputs written to client shared memory do
 * not count: their region bounds them. Called by the front doors before they encode, inside the
 * core's `onResponse`: the error is thrown back to the core, which counts the request as failed and
 * answers it through `onError`, as an output region too small is.
 */
export function checkOutputSize(response: InferenceResponse, maxBytes: number, sharedMemory?: SharedMemoryUse): void {
  let total = 0;
  for (const t of response.outputs) if (sharedMemory?.output(t.name) === undefined) total += byteSizeOf(t);
  if (total > maxBytes) throw outputTooLarge(response.modelName, total, maxBytes);
}

function outputTooLarge(model: string, size: number, limit: number): InferenceError {
  return InferenceError.invalidArg(
    `the response of model '${model}' holds ${size} bytes of output data, more than the maximum allowed output size of ${limit} bytes. ` +
      'Use --max-output-size to increase the limit.',
  );
}

import type { SharedMemoryUse } from '@nereid/core';
import type { InferenceResponse } from '@nereid/protocol';
import { tensorDataToBytes } from '@nereid/tensor';
import { checkOutputSize, DEFAULT_MAX_OUTPUT_SIZE } from '../output-size';
import { encodeParameters } from './infer-parameters';
import type { WireInferOutputTensor, WireModelInferResponse, WireParameters } from './wire-types';

const EMPTY = new Uint8Array(0);

/**
 * InferenceResponse → ModelInferResponse. Like Triton, every output's data goes in
 * `raw_output_contents` (same order as `outputs`; BYTES with 4-byte LE length prefixes); typed
 * `contents` are never filled. Buffers are passed as views, not copied. Outputs bound to client
 * shared memory (`sharedMemory`) are written into their regions instead. Outputs over
 * `maxOutputBytes` (`--max-output-size`) throw INVALID_ARG before anything is encoded or written.
 */
export function encodeInferResponse(
  response: InferenceResponse,
  extra?: WireParameters,
  sharedMemory?: SharedMemoryUse,
  maxOutputBytes = DEFAULT_MAX_OUTPUT_SIZE,
): WireModelInferResponse {
  // Inputs read in place from client shared memory: an object truncated during the run answers an error.
  sharedMemory?.verifyInputs();
  checkOutputSize(response, maxOutputBytes, sharedMemory);
  const n = response.outputs.length;
  const outputs = new Array<WireInferOutputTensor>(n);
  const raw = new Array<Uint8Array>(n);
  for (let i = 0; i < n; i++) {
    const t = response.outputs[i];
    outputs[i] = { name: t.name, datatype: t.datatype, shape: t.shape };
    const slice = sharedMemory?.output(t.name);
    if (slice) {
      // Written into the client's region; its raw entry stays empty, as in Triton.
      slice.write(tensorDataToBytes(t), t.name);
      raw[i] = EMPTY;
    } else {
      raw[i] = tensorDataToBytes(t);
    }
  }
  const msg: WireModelInferResponse = {
    model_name: response.modelName,
    model_version: response.modelVersion,
    id: response.id,
    outputs,
    raw_output_contents: raw,
  };
  const parameters = mergeParameters(encodeParameters(response.parameters), extra);
  if (parameters) msg.parameters = parameters;
  return msg;
}

function mergeParameters(a: WireParameters | undefined, b: WireParameters | undefined): WireParameters | undefined {
  if (!b) return a;
  return a ? { ...a, ...b } : b;
}

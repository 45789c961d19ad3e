import type { ModelConfig, ModelInput, ModelOutput } from '@nereid/model-config';
import { InferenceError } from '@nereid/protocol';
import { toConfigType } from '@nereid/tensor';
import { dataTypeFromOnnx } from './datatypes';
import type { OnnxModelInfo, OnnxValueInfo } from './onnx-model-info';

/**
 * Fills `max_batch_size`, `input`, `output` and `dynamic_batching` from the ONNX graph, the way
 * Triton's onnxruntime backend does:
 * - a config that lists both inputs and outputs is left as it is;
 * - the model can batch when every input and output has a dynamic (or symbolic) first dim; then an
 *   absent `max_batch_size` becomes `defaultMaxBatchSize`, and when the result is > 1 and no
 *   scheduler is configured `dynamic_batching {}` is added;
 * - a model that cannot batch keeps `max_batch_size` 0 (a non-zero one is an error);
 * - an empty `input` (or `output`) list is filled with every graph input (output), dims without the
 *   batch dim; a scalar gets `dims: [1]` (with `reshape { shape: [] }` when batching); sequence
 *   controls and implicit states are left out (the sequence batcher fills them).
 * An explicit `max_batch_size` (0 included) is kept: the JSON form tells "absent" from "0".
 */
export function autoCompleteFromOnnx(
  config: ModelConfig,
  info: OnnxModelInfo,
  defaultMaxBatchSize: number,
): ModelConfig {
  const hasInputs = (config.input?.length ?? 0) + (config.batch_input?.length ?? 0) > 0;
  const hasOutputs = (config.output?.length ?? 0) > 0;
  if (hasInputs && hasOutputs) return config;

  const modelName = config.name ?? '';
  const out: ModelConfig = { ...config };
  const canBatch = [...info.inputs, ...info.outputs].every((v) => (v.dims?.length ?? 0) > 0 && v.dims?.[0] === -1);
  if (canBatch) {
    if (out.max_batch_size === undefined) out.max_batch_size = Math.max(defaultMaxBatchSize, 0);
    if (out.max_batch_size > 1 && !out.dynamic_batching && !out.sequence_batching) out.dynamic_batching = {};
  } else if ((out.max_batch_size ?? 0) !== 0) {
    throw InferenceError.invalidArg(
      `autofill failed for model '${modelName}': model does not support batching while non-zero max_batch_size is specified`,
    );
  } else {
    out.max_batch_size = 0;
  }

  const batching = out.max_batch_size > 0;
  // Sequence controls and implicit states are the server's tensors, never the config's inputs and
  // outputs (Triton would list them, and its load check would then count them twice).
  const sequence = config.sequence_batching;
  const serverTensors = new Set([
    ...(sequence?.control_input ?? []).map((c) => c.name ?? ''),
    ...(sequence?.state ?? []).flatMap((s) => [s.input_name ?? '', s.output_name ?? '']),
  ]);
  const clientTensors = (values: readonly OnnxValueInfo[]) => values.filter((v) => !serverTensors.has(v.name));
  if (!hasInputs) out.input = clientTensors(info.inputs).map((v) => completeIo(v, batching, modelName));
  if (!hasOutputs) out.output = clientTensors(info.outputs).map((v) => completeIo(v, batching, modelName));
  return out;
}

function completeIo(v: OnnxValueInfo, batching: boolean, modelName: string): ModelInput & ModelOutput {
  if (!v.isTensor) {
    throw InferenceError.unsupported(
      `autofill failed for model '${modelName}': '${v.name}' is not a tensor (sequence, map and optional values are not supported)`,
    );
  }
  const dataType = dataTypeFromOnnx(v.elemType);
  if (dataType === undefined) {
    throw InferenceError.unsupported(
      `autofill failed for model '${modelName}': unsupported ONNX element type ${v.elemType} for '${v.name}'`,
    );
  }
  if (v.dims === undefined) {
    throw InferenceError.invalidArg(
      `autofill failed for model '${modelName}': the model does not declare the shape of '${v.name}'; list it in config.pbtxt`,
    );
  }
  const dims = batching ? v.dims.slice(1) : [...v.dims];
  const io: ModelInput & ModelOutput = { name: v.name, data_type: toConfigType(dataType), dims };
  if (dims.length === 0) {
    io.dims = [1];
    if (batching) io.reshape = { shape: [] };
  }
  return io;
}

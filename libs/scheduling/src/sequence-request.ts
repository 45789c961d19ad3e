import {
  SequenceBatcherErrors as Errors,
  type InferenceError,
  type InferenceRequest,
} from '@nereid/protocol';
import { allocateTensorData, elementCount, isBytesData, type Tensor } from '@nereid/tensor';
import type { SequenceControls } from './sequence-controls';

/** A tensor of the same name, datatype and shape with every element zero (BYTES: empty). */
function zeroLike(t: Tensor): Tensor {
  return { name: t.name, datatype: t.datatype, shape: t.shape, data: allocateTensorData(t.datatype, isBytesData(t.data) ? t.data.length : elementCount(t.shape)) };
}

/**
 * A padding row for an empty slot of a direct batch: a copy of a live row of the batch (so that it
 * batches with it) with zero data, READY/START/END false and CORRID 0, id '' and `padding` set.
 * The rows of one batch share their zero tensors through `zeros` (live tensor → its zero copy), as
 * Triton's null requests share one buffer: padding costs one row's size, not one per empty slot
 * (a 64 MiB row in slot 0 and a sequence in slot 999 would otherwise make 999 copies).
 */
export function paddingRequest(live: InferenceRequest, controls: SequenceControls, zeros = new Map<Tensor, Tensor>()): InferenceRequest {
  const inputs: Tensor[] = [];
  let controlsAdded = false;
  for (const t of live.inputs) {
    if (!controls.names.has(t.name)) {
      let zero = zeros.get(t);
      if (zero === undefined) zeros.set(t, (zero = zeroLike(t)));
      inputs.push(zero);
    }
    else if (!controlsAdded) {
      controls.append(inputs, { start: false, end: false, ready: false }, 0n);
      controlsAdded = true;
    }
  }
  return {
    id: '',
    modelName: live.modelName,
    modelVersion: live.modelVersion,
    inputs,
    outputs: live.outputs,
    parameters: live.parameters,
    sequenceId: 0n,
    sequenceStart: false,
    sequenceEnd: false,
    priority: live.priority,
    timeoutUs: 0,
    padding: true,
  };
}

/** The correlation id as Triton prints it in messages. */
export function sequenceIdText(id: bigint | string): string {
  return typeof id === 'bigint' ? id.toString() : id;
}

/** Whether a request carries a correlation id (0 and '' mean none). */
export function inSequence(id: bigint | string): boolean {
  return typeof id === 'bigint' ? id !== 0n : id !== '';
}

/**
 * The sequence batcher's checks of a request, in Triton's order: the correlation id's type against
 * the CORRID control (core's request normalization), the batch size, then a non-zero id.
 */
export function checkSequenceRequest(request: InferenceRequest, controls: SequenceControls, maxBatchSize: number): InferenceError | undefined {
  const corrid = controls.correlationControl;
  if (corrid !== undefined) {
    const isString = typeof request.sequenceId === 'string';
    if (isString !== (corrid.datatype === 'BYTES')) {
      return Errors.correlationIdType(request.id, corrid.name, isString ? 'BYTES' : 'UINT64', request.modelName, corrid.datatype);
    }
  }
  if (maxBatchSize > 0) {
    const shape = request.inputs[0]?.shape;
    if (shape !== undefined && shape.length > 0 && shape[0] > 1) return Errors.batchSizeOne(request.modelName);
  }
  if (!inSequence(request.sequenceId)) return Errors.correlationIdRequired(request.modelName);
  return undefined;
}

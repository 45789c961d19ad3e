import type { ModelConfig, ModelSequenceBatching, SequenceControl, SequenceState } from '../types';
import { DIM_RULE, invalid, isValidDim, missingDataType } from './common';

const CORRID = 'CONTROL_SEQUENCE_CORRID';
const CORRID_TYPES = ['TYPE_UINT64', 'TYPE_INT64', 'TYPE_UINT32', 'TYPE_INT32', 'TYPE_STRING'];
const VALUE_LISTS = ['int32_false_true', 'fp32_false_true', 'bool_false_true'] as const;

function validateControl(control: SequenceControl, kind: string, model: string): void {
  const given = VALUE_LISTS.filter((f) => (control[f] ?? []).length > 0);
  if (kind === CORRID) {
    if (given.length > 0) invalid(`sequence batching must not specify false/true values for ${CORRID} for ${model}`);
    if (!CORRID_TYPES.includes(control.data_type ?? '')) {
      invalid(
        `unexpected data type for control ${CORRID} for ${model}. ` +
          'Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING',
      );
    }
    return;
  }
  if (given.length !== 1) {
    invalid(`sequence batching must specify exactly one of 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for ${kind} for ${model}`);
  }
  if ((control[given[0]] ?? []).length !== 2) {
    invalid(`sequence batching control '${given[0]}' must have exactly 2 entries (false, true) for ${kind} for ${model}`);
  }
}

function validateControlInputs(batcher: ModelSequenceBatching, model: string): void {
  const kinds = new Set<string>();
  const names = new Set<string>();
  for (const input of batcher.control_input ?? []) {
    const name = input.name ?? '';
    if (!name) invalid(`sequence batching control tensor must have a name for ${model}`);
    for (const control of input.control ?? []) {
      const kind = control.kind ?? 'CONTROL_SEQUENCE_START';
      if (names.has(name)) invalid(`sequence batching control tensor '${name}' is specified for multiple control kinds for ${model}`);
      if (kinds.has(kind)) invalid(`sequence batching specifies multiple ${kind} tensors for ${model}`);
      names.add(name);
      kinds.add(kind);
      validateControl(control, kind, model);
    }
  }
}

function validateState(state: SequenceState, model: string): void {
  const prefix = 'sequence batching state';
  if (!state.input_name) invalid(`${prefix} must specify 'input_name' for ${model}`);
  if (!state.output_name) invalid(`${prefix} '${state.input_name}' must specify 'output_name' for ${model}`);
  if (missingDataType(state.data_type)) invalid(`${prefix} '${state.input_name}' must specify 'data_type' for ${model}`);
  const dims = state.dims ?? [];
  if (dims.length === 0) invalid(`${prefix} '${state.input_name}' must specify 'dims' for ${model}`);
  if (!dims.every(isValidDim)) invalid(`${prefix} '${state.input_name}' ${DIM_RULE} for ${model}`);
  for (const init of state.initial_state ?? []) {
    if (init.zero_data === undefined && !init.data_file) {
      invalid(`initial state '${init.name ?? ''}' of ${prefix} '${state.input_name}' must specify 'zero_data' or 'data_file' for ${model}`);
    }
  }
}

function validateStrategy(batcher: ModelSequenceBatching, mbs: number, model: string): void {
  const util = batcher.direct?.minimum_slot_utilization ?? 0;
  if (util < 0 || util > 1) invalid(`sequence batching minimum slot utilization must be in range (0.0, 1.0] for ${model}`);
  const oldest = batcher.oldest;
  if (!oldest) return;
  if ((oldest.max_candidate_sequences ?? 0) < 1) {
    invalid(`sequence batching oldest strategy must specify 'max_candidate_sequences' > 0 for ${model}`);
  }
  for (const size of oldest.preferred_batch_size ?? []) {
    if (size < 1) invalid(`sequence batching preferred batch size must be positive for ${model}`);
    if (size > mbs) invalid(`sequence batching preferred batch size must be <= max batch size for ${model}`);
  }
}

/** Sequence batcher checks (model-config.md §9, §14). */
export function validateSequenceBatching(config: ModelConfig): void {
  const batcher = config.sequence_batching;
  if (!batcher) return;
  const model = config.name ?? '';
  validateStrategy(batcher, config.max_batch_size ?? 0, model);
  validateControlInputs(batcher, model);
  for (const state of batcher.state ?? []) validateState(state, model);
}

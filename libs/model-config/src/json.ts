/**
 * Triton's JSON form of ModelConfig (`GET .../config`) and its reverse for the load API's `config`
 * override. See http-protocol.md §5 and model-config.md §13.
 */
import { setOwn } from '@nereid/protocol';
import { getEnum, getMessage, MODEL_CONFIG_MESSAGE, type FieldDescriptor, type MessageDescriptor } from './schema';
import type { ModelConfig } from './types';
import { defaultValueOf, isPlainObject, type JsonObject } from './values';

export { modelConfigFromJson } from './json-input';

/**
 * 64-bit fields Triton prints as JSON numbers (http-protocol.md §5). Other 64-bit fields keep protobuf
 * JSON's quoted-string form, as Triton prints them.
 */
const INT64_AS_NUMBER = new Set([
  'ModelInput.dims',
  'ModelOutput.dims',
  'ModelTensorReshape.shape',
  'ModelVersionPolicy.Specific.versions',
  'ModelDynamicBatching.max_queue_delay_microseconds',
  'ModelDynamicBatching.priority_levels',
  'ModelDynamicBatching.default_priority_level',
  'ModelQueuePolicy.default_timeout_microseconds',
  'ModelSequenceBatching.max_sequence_idle_microseconds',
  'ModelSequenceBatching.StrategyDirect.max_queue_delay_microseconds',
  'ModelSequenceBatching.StrategyOldest.max_queue_delay_microseconds',
  'ModelSequenceBatching.State.dims',
  'ModelEnsembling.Step.model_version',
  'ModelWarmup.Input.dims',
]);

function scalarToJson(owner: MessageDescriptor, field: FieldDescriptor, value: unknown): unknown {
  if (field.kind === 'enum') {
    if (typeof value !== 'number') return value;
    return getEnum(field.ref as string).values.find((v) => v.number === value)?.name ?? value;
  }
  switch (field.scalar) {
    case 'int64':
    case 'uint64':
      return INT64_AS_NUMBER.has(`${owner.fullName}.${field.name}`) ? Number(value) : String(value);
    case 'float':
    case 'double':
      return floatToJson(Number(value));
    default:
      return value;
  }
}

function floatToJson(n: number): number | string {
  if (Number.isNaN(n)) return 'NaN';
  if (n === Infinity) return 'Infinity';
  if (n === -Infinity) return '-Infinity';
  return n;
}

function valueToJson(owner: MessageDescriptor, field: FieldDescriptor, value: unknown): unknown {
  if (field.kind === 'message') return messageToJson(getMessage(field.ref as string), value);
  return scalarToJson(owner, field, value);
}

function fieldToJson(desc: MessageDescriptor, field: FieldDescriptor, value: unknown): unknown {
  if (field.label === 'repeated') return (Array.isArray(value) ? value : []).map((v) => valueToJson(desc, field, v));
  if (field.label === 'map') {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(isPlainObject(value) ? value : {})) setOwn(out, k, valueToJson(desc, field, v));
    return out;
  }
  return valueToJson(desc, field, value ?? defaultValueOf(field));
}

function messageToJson(desc: MessageDescriptor, value: unknown): JsonObject {
  const obj = isPlainObject(value) ? value : {};
  const out: JsonObject = {};
  for (const field of desc.fields) {
    const v = obj[field.name];
    const present = v !== undefined && v !== null;
    // Unset sub-messages and unset oneof members are omitted; every other field is printed.
    if (!present && (field.oneof || (field.kind === 'message' && field.label === 'singular'))) continue;
    out[field.name] = fieldToJson(desc, field, v);
  }
  return out;
}

/**
 * Triton's `/config` JSON form: proto field names in declaration order, every scalar/repeated/map field
 * printed even at its default, unset sub-messages omitted, enums by name, Triton's int64 fields as numbers.
 */
export function modelConfigToJson(config: ModelConfig): Record<string, unknown> {
  return messageToJson(getMessage(MODEL_CONFIG_MESSAGE), config);
}

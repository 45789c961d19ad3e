import { InferenceError, setOwn } from '@nereid/protocol';
import { getEnum, getMessage, MODEL_CONFIG_MESSAGE, PROTO_PACKAGE, type FieldDescriptor, type MessageDescriptor, type ScalarType } from './schema';
import type { ModelConfig } from './types';
import { isPlainObject, type JsonObject } from './values';

const INT_RANGES: Record<string, [bigint, bigint]> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
};

function bad(detail: string): never {
  throw InferenceError.invalidArg(`Invalid config override: ${detail}`);
}

function where(desc: MessageDescriptor, field: FieldDescriptor): string {
  return `field "${field.name}" of message ${PROTO_PACKAGE}.${desc.fullName}`;
}

function camelCase(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

function integerFromJson(desc: MessageDescriptor, field: FieldDescriptor, scalar: ScalarType, v: unknown): number {
  let value: bigint | undefined;
  if (typeof v === 'number' && Number.isInteger(v)) value = BigInt(v);
  else if (typeof v === 'string' && /^-?\d+$/.test(v.trim())) value = BigInt(v.trim());
  if (value === undefined) bad(`expected an integer for ${where(desc, field)}, got ${JSON.stringify(v)}`);
  const [min, max] = INT_RANGES[scalar];
  if (value < min || value > max) bad(`integer out of range for ${where(desc, field)}: ${String(v)}`);
  return Number(value);
}

function floatFromJson(desc: MessageDescriptor, field: FieldDescriptor, v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string') {
    if (v === 'NaN') return NaN;
    if (v === 'Infinity') return Infinity;
    if (v === '-Infinity') return -Infinity;
    if (v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  }
  return bad(`expected a number for ${where(desc, field)}, got ${JSON.stringify(v)}`);
}

function enumFromJson(desc: MessageDescriptor, field: FieldDescriptor, v: unknown): string {
  const values = getEnum(field.ref as string).values;
  const found =
    typeof v === 'string'
      ? values.find((e) => e.name.toLowerCase() === v.toLowerCase())
      : typeof v === 'number'
        ? values.find((e) => e.number === v)
        : undefined;
  if (!found) bad(`invalid value ${JSON.stringify(v)} for enum ${where(desc, field)}`);
  return found.name;
}

function scalarFromJson(desc: MessageDescriptor, field: FieldDescriptor, v: unknown): unknown {
  if (field.kind === 'enum') return enumFromJson(desc, field, v);
  const scalar = field.scalar as ScalarType;
  if (scalar === 'string') {
    if (typeof v !== 'string') bad(`expected a string for ${where(desc, field)}, got ${JSON.stringify(v)}`);
    return v;
  }
  if (scalar === 'bool') {
    if (typeof v !== 'boolean') bad(`expected a boolean for ${where(desc, field)}, got ${JSON.stringify(v)}`);
    return v;
  }
  if (scalar === 'float' || scalar === 'double') return floatFromJson(desc, field, v);
  return integerFromJson(desc, field, scalar, v);
}

function valueFromJson(desc: MessageDescriptor, field: FieldDescriptor, v: unknown): unknown {
  if (field.kind === 'message') return messageFromJson(getMessage(field.ref as string), v);
  return scalarFromJson(desc, field, v);
}

function mapFromJson(desc: MessageDescriptor, field: FieldDescriptor, v: unknown): JsonObject {
  if (!isPlainObject(v)) bad(`expected an object for map ${where(desc, field)}`);
  const out: JsonObject = {};
  for (const [k, item] of Object.entries(v)) {
    const key = field.mapKey === 'string' ? k : String(integerFromJson(desc, field, field.mapKey as ScalarType, k));
    setOwn(out, key, valueFromJson(desc, field, item));
  }
  return out;
}

function fieldFromJson(desc: MessageDescriptor, field: FieldDescriptor, v: unknown): unknown {
  if (field.label === 'map') return mapFromJson(desc, field, v);
  if (field.label !== 'repeated') return valueFromJson(desc, field, v);
  if (!Array.isArray(v)) bad(`expected an array for repeated ${where(desc, field)}`);
  return v.map((item) => valueFromJson(desc, field, item));
}

function messageFromJson(desc: MessageDescriptor, v: unknown): JsonObject {
  if (!isPlainObject(v)) bad(`expected an object for message ${PROTO_PACKAGE}.${desc.fullName}, got ${JSON.stringify(v)}`);
  const out: JsonObject = {};
  const oneofs = new Map<string, string>();
  for (const [key, value] of Object.entries(v)) {
    const field = desc.fields.find((f) => f.name === key || camelCase(f.name) === key);
    if (!field) bad(`Cannot find field: ${key} in message ${PROTO_PACKAGE}.${desc.fullName}`);
    if (value === null) continue;
    if (field.name in out) bad(`field "${field.name}" of message ${PROTO_PACKAGE}.${desc.fullName} is given twice`);
    const other = field.oneof ? oneofs.get(field.oneof) : undefined;
    if (field.oneof && other !== undefined) {
      bad(`field "${field.name}" is specified along with field "${other}", another member of oneof "${field.oneof}"`);
    }
    if (field.oneof) oneofs.set(field.oneof, field.name);
    out[field.name] = fieldFromJson(desc, field, value);
  }
  return out;
}

/**
 * Reads the JSON form (the load API's `config` override, as a parsed value or its JSON text) into a
 * ModelConfig holding the fields given. Proto or lowerCamel field names; enum names case-insensitive or
 * enum numbers; integers as numbers or numeric strings. Errors: INVALID_ARG `Invalid config override: ...`.
 */
export function modelConfigFromJson(json: unknown): ModelConfig {
  let value = json;
  if (typeof json === 'string') {
    try {
      value = JSON.parse(json) as unknown;
    } catch (e) {
      bad((e as Error).message);
    }
  }
  return messageFromJson(getMessage(MODEL_CONFIG_MESSAGE), value) as ModelConfig;
}

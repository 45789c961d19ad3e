import { getMessage, mapEntryMessage, MODEL_CONFIG_MESSAGE, type FieldDescriptor, type MessageDescriptor } from '../schema';
import type { ModelConfig } from '../types';
import { isPlainObject, type JsonObject } from '../values';
import { integerText } from './scalars';

const INDENT = '  ';

/** A string literal in double quotes with C escapes for quotes, backslashes and control characters. */
export function quotePbtxtString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const code = ch.codePointAt(0) as number;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (code < 0x20 || code === 0x7f) out += `\\${code.toString(8).padStart(3, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

function formatFloat(n: number): string {
  if (Number.isNaN(n)) return 'nan';
  if (n === Infinity) return 'inf';
  if (n === -Infinity) return '-inf';
  return String(n);
}

function formatScalar(field: FieldDescriptor, value: unknown): string {
  if (field.kind === 'enum') return String(value);
  switch (field.scalar) {
    case 'string':
      return quotePbtxtString(String(value));
    case 'bool':
      return value ? 'true' : 'false';
    case 'float':
    case 'double':
      return formatFloat(Number(value));
    case 'int32':
    case 'uint32':
    case 'int64':
    case 'uint64':
      return typeof value === 'number' ? integerText(value, field.scalar) : String(value);
    default:
      return String(value);
  }
}

function printMessageBody(desc: MessageDescriptor, obj: JsonObject, pad: string): string[] {
  const lines: string[] = [];
  for (const field of desc.fields) {
    const value = obj[field.name];
    if (value === undefined || value === null) continue;
    lines.push(...printField(desc, field, value, pad));
  }
  return lines;
}

function printMessageValue(name: string, desc: MessageDescriptor, value: unknown, pad: string): string[] {
  const body = printMessageBody(desc, isPlainObject(value) ? value : {}, pad + INDENT);
  if (body.length === 0) return [`${pad}${name} { }`];
  return [`${pad}${name} {`, ...body, `${pad}}`];
}

function printField(owner: MessageDescriptor, field: FieldDescriptor, value: unknown, pad: string): string[] {
  if (field.label === 'map') {
    const entries = Object.entries(isPlainObject(value) ? value : {});
    if (entries.length === 0) return [`${pad}${field.name}: []`];
    const entryDesc = mapEntryMessage(owner, field);
    const keyField = entryDesc.fields[0];
    return entries.flatMap(([k, v]) => {
      const key = keyField.scalar === 'string' ? k : Number(k);
      return printMessageValue(field.name, entryDesc, { key, value: v }, pad);
    });
  }
  if (field.label === 'repeated') {
    const items = Array.isArray(value) ? value : [value];
    if (field.kind !== 'message') return [`${pad}${field.name}: [${items.map((v) => formatScalar(field, v)).join(', ')}]`];
    if (items.length === 0) return [`${pad}${field.name}: []`];
    return items.flatMap((v) => printMessageValue(field.name, getMessage(field.ref as string), v, pad));
  }
  if (field.kind === 'message') return printMessageValue(field.name, getMessage(field.ref as string), value, pad);
  return [`${pad}${field.name}: ${formatScalar(field, value)}`];
}

/** Canonical config.pbtxt text of a JSON-form ModelConfig; parsing it gives back an identical object. */
export function printModelConfig(config: ModelConfig): string {
  const lines = printMessageBody(getMessage(MODEL_CONFIG_MESSAGE), config as JsonObject, '');
  return lines.length === 0 ? '' : lines.join('\n') + '\n';
}

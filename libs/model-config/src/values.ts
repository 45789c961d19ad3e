import { setOwn } from '@nereid/protocol';
import { getEnum, type FieldDescriptor } from './schema';

/** A message in its JSON form. */
export type JsonObject = Record<string, unknown>;

/** Default value of one (non-repeated) value of `field`'s type: `{}`, first enum name, `""`, `false`, `0`. */
export function defaultValueOf(field: Pick<FieldDescriptor, 'kind' | 'scalar' | 'ref'>): unknown {
  if (field.kind === 'message') return {};
  if (field.kind === 'enum') return getEnum(field.ref as string).values[0].name;
  if (field.scalar === 'string') return '';
  if (field.scalar === 'bool') return false;
  return 0;
}

export function isPlainObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep copy of a JSON-form value (configs hold only plain data; NaN/Infinity survive). */
export function cloneJson<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => cloneJson(v) as unknown) as T;
  if (isPlainObject(value)) {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value)) setOwn(out, k, cloneJson(v));
    return out as T;
  }
  return value;
}

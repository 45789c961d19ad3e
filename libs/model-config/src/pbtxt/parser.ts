import { InferenceError, setOwn } from '@nereid/protocol';
import { getMessage, mapEntryMessage, MODEL_CONFIG_MESSAGE, PROTO_PACKAGE, type FieldDescriptor, type MessageDescriptor } from '../schema';
import type { ModelConfig } from '../types';
import { defaultValueOf, type JsonObject } from '../values';
import { parseScalarValue } from './scalars';
import { PbtxtSyntaxError, Tokenizer, type Token } from './tokenizer';

const CLOSERS: Record<string, string> = { '{': '}', '<': '>' };

function describe(tok: Token): string {
  if (tok.type === 'eof') return 'end of input';
  return tok.type === 'string' ? tok.text : `"${tok.text}"`;
}

function fail(tok: Token, detail: string): never {
  throw new PbtxtSyntaxError(tok.line, tok.col, detail);
}

/** Which fields of one message occurrence were already given (for non-repeated and oneof checks). */
interface SeenFields {
  fields: Set<string>;
  oneofs: Map<string, string>;
}

/** Recursive-descent parser of the text format into the JSON form, driven by the schema table. */
class PbtxtParser {
  constructor(private readonly t: Tokenizer) {}

  parseRoot(): JsonObject {
    return this.parseFields(getMessage(MODEL_CONFIG_MESSAGE), null);
  }

  private isSymbol(text: string): boolean {
    return this.t.current.type === 'symbol' && this.t.current.text === text;
  }

  private tryConsume(text: string): boolean {
    if (!this.isSymbol(text)) return false;
    this.t.advance();
    return true;
  }

  private parseFields(desc: MessageDescriptor, closer: string | null): JsonObject {
    const obj: JsonObject = {};
    const seen: SeenFields = { fields: new Set(), oneofs: new Map() };
    for (;;) {
      const tok = this.t.current;
      if (closer !== null && this.tryConsume(closer)) return obj;
      if (tok.type === 'eof') {
        if (closer === null) return obj;
        fail(tok, `Expected "${closer}", found end of input.`);
      }
      this.parseField(desc, obj, seen);
      if (!this.tryConsume(',')) this.tryConsume(';');
    }
  }

  private lookupField(desc: MessageDescriptor, seen: SeenFields): FieldDescriptor {
    const tok = this.t.current;
    if (tok.type !== 'ident') fail(tok, `Expected identifier, found ${describe(tok)}.`);
    const field = desc.fields.find((f) => f.name === tok.text);
    if (!field) fail(tok, `Message type "${PROTO_PACKAGE}.${desc.fullName}" has no field named "${tok.text}".`);
    if (field.label === 'singular' && seen.fields.has(field.name)) {
      fail(tok, `Non-repeated field "${field.name}" is specified multiple times.`);
    }
    const other = field.oneof ? seen.oneofs.get(field.oneof) : undefined;
    if (field.oneof && other !== undefined && other !== field.name) {
      fail(tok, `Field "${field.name}" is specified along with field "${other}", another member of oneof "${field.oneof}".`);
    }
    seen.fields.add(field.name);
    if (field.oneof) seen.oneofs.set(field.oneof, field.name);
    this.t.advance();
    return field;
  }

  private parseField(desc: MessageDescriptor, obj: JsonObject, seen: SeenFields): void {
    const field = this.lookupField(desc, seen);
    const isMessage = field.kind === 'message' || field.label === 'map';
    if (!this.tryConsume(':') && !isMessage) fail(this.t.current, `Expected ":", found ${describe(this.t.current)}.`);
    if (field.label !== 'singular') initCollection(obj, field);
    if (field.label !== 'singular' && this.tryConsume('[')) {
      this.parseList(desc, field, obj);
      return;
    }
    this.storeValue(desc, field, obj);
  }

  private parseList(desc: MessageDescriptor, field: FieldDescriptor, obj: JsonObject): void {
    if (this.tryConsume(']')) return;
    for (;;) {
      this.storeValue(desc, field, obj);
      if (this.tryConsume(']')) return;
      if (!this.tryConsume(',')) fail(this.t.current, `Expected "]", found ${describe(this.t.current)}.`);
    }
  }

  private storeValue(desc: MessageDescriptor, field: FieldDescriptor, obj: JsonObject): void {
    if (field.label === 'map') {
      const entry = this.parseMessageValue(mapEntryMessage(desc, field));
      const key = entry.key ?? defaultValueOf({ ...field, kind: 'scalar', scalar: field.mapKey });
      const value = entry.value ?? defaultValueOf(field);
      setOwn(obj[field.name] as JsonObject, String(key), value);
      return;
    }
    const value = field.kind === 'message' ? this.parseMessageValue(getMessage(field.ref as string)) : parseScalarValue(this.t, field);
    if (field.label === 'repeated') (obj[field.name] as unknown[]).push(value);
    else obj[field.name] = value;
  }

  private parseMessageValue(desc: MessageDescriptor): JsonObject {
    const open = this.t.current;
    if (open.type !== 'symbol' || !(open.text in CLOSERS)) fail(open, `Expected "{", found ${describe(open)}.`);
    this.t.advance();
    return this.parseFields(desc, CLOSERS[open.text]);
  }
}

function initCollection(obj: JsonObject, field: FieldDescriptor): void {
  if (obj[field.name] === undefined) obj[field.name] = field.label === 'map' ? {} : [];
}

/** Error text of a config.pbtxt that does not parse, with Triton's prefix. */
export function readTextProtoError(file: string, detail: string): InferenceError {
  return InferenceError.invalidArg(`failed to read text proto from ${file}: ${detail}`);
}

/**
 * Parses config.pbtxt text into the JSON-form ModelConfig (only the fields present in the text).
 * Errors are INVALID_ARG `failed to read text proto from <file>: <line>:<col>: <what>`.
 */
export function parseModelConfig(text: string, file: string): ModelConfig {
  try {
    return new PbtxtParser(new Tokenizer(text)).parseRoot() as ModelConfig;
  } catch (e) {
    if (e instanceof PbtxtSyntaxError) throw readTextProtoError(file, e.message);
    throw e;
  }
}

import { getEnum, type FieldDescriptor, type ScalarType } from '../schema';
import { PbtxtSyntaxError, type Token, type Tokenizer } from './tokenizer';

/** A scalar value of the JSON form: string, boolean, number or enum name. */
export type ScalarValue = string | boolean | number;

const INT_RANGES: Record<string, [bigint, bigint]> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
};

/**
 * The text of an integer field's value: the exact decimal digits of the number, clamped to the
 * field's range. A 64-bit value beyond 2^53 is held as the nearest double, which may lie just past
 * the range (9223372036854775807 is held as 2^63, 18446744073709551615 as 2^64) and whose shortest
 * decimal form (String) has other digits ("9223372036854775808" prints "9223372036854776000"):
 * either would not parse back. The text returned parses back to the same number.
 */
export function integerText(value: number, scalar: 'int32' | 'uint32' | 'int64' | 'uint64'): string {
  if (!Number.isInteger(value)) return String(value);
  const [min, max] = INT_RANGES[scalar];
  const n = BigInt(value);
  return (n < min ? min : n > max ? max : n).toString();
}

function fail(tok: Token, detail: string): never {
  throw new PbtxtSyntaxError(tok.line, tok.col, detail);
}

function describe(tok: Token): string {
  if (tok.type === 'eof') return 'end of input';
  return tok.type === 'string' ? tok.text : `"${tok.text}"`;
}

/** Value of an integer token's text (decimal, 0x hex or leading-0 octal). */
export function integerTokenValue(text: string): bigint {
  if (/^0[xX]/.test(text)) return BigInt(text);
  if (/^0[0-7]+$/.test(text)) return BigInt(`0o${text.slice(1)}`);
  return BigInt(text);
}

function consumeMinus(t: Tokenizer): boolean {
  if (t.current.type === 'symbol' && t.current.text === '-') {
    t.advance();
    return true;
  }
  return false;
}

function parseInteger(t: Tokenizer, scalar: ScalarType): number {
  const start = t.current;
  const negative = scalar.startsWith('int') && consumeMinus(t);
  const tok = t.current;
  if (tok.type !== 'int') fail(tok, `Expected integer, found ${describe(tok)}.`);
  t.advance();
  const value = negative ? -integerTokenValue(tok.text) : integerTokenValue(tok.text);
  const [min, max] = INT_RANGES[scalar];
  if (value < min || value > max) fail(start, `Integer out of range (${negative ? '-' : ''}${tok.text}).`);
  return Number(value);
}

function parseFloatValue(t: Tokenizer): number {
  const negative = consumeMinus(t);
  const tok = t.current;
  let value: number;
  if (tok.type === 'int') value = Number(integerTokenValue(tok.text));
  else if (tok.type === 'float') value = Number(tok.text.replace(/[fF]$/, ''));
  else if (tok.type === 'ident' && /^(inf|infinity)$/i.test(tok.text)) value = Infinity;
  else if (tok.type === 'ident' && /^nan$/i.test(tok.text)) value = NaN;
  else fail(tok, `Expected double, found ${describe(tok)}.`);
  t.advance();
  return negative ? -value : value;
}

const TRUE_WORDS = new Set(['true', 'True', 't']);
const FALSE_WORDS = new Set(['false', 'False', 'f']);

function parseBool(t: Tokenizer, field: FieldDescriptor): boolean {
  const tok = t.current;
  let value: boolean | undefined;
  if (tok.type === 'ident' && TRUE_WORDS.has(tok.text)) value = true;
  else if (tok.type === 'ident' && FALSE_WORDS.has(tok.text)) value = false;
  else if (tok.type === 'int' && /^(0x)?0*[01]$/i.test(tok.text)) value = integerTokenValue(tok.text) === 1n;
  if (value === undefined) fail(tok, `Invalid value for boolean field "${field.name}". Value: ${describe(tok)}.`);
  t.advance();
  return value;
}

function parseString(t: Tokenizer): string {
  const tok = t.current;
  if (tok.type !== 'string') fail(tok, `Expected string, found ${describe(tok)}.`);
  let value = '';
  while (t.current.type === 'string') value += t.advance().value ?? '';
  return value;
}

function parseEnum(t: Tokenizer, field: FieldDescriptor): string {
  const e = getEnum(field.ref as string);
  const start = t.current;
  if (start.type === 'ident') {
    t.advance();
    if (e.values.some((v) => v.name === start.text)) return start.text;
    fail(start, `Unknown enumeration value of "${start.text}" for field "${field.name}".`);
  }
  const negative = consumeMinus(t);
  const tok = t.current;
  if (tok.type !== 'int') fail(tok, `Expected integer or identifier, found ${describe(tok)}.`);
  t.advance();
  const number = Number(integerTokenValue(tok.text)) * (negative ? -1 : 1);
  const found = e.values.find((v) => v.number === number);
  if (!found) fail(start, `Unknown enumeration value of "${number}" for field "${field.name}".`);
  return found.name;
}

/** Parses one scalar or enum value for `field` at the tokenizer's cursor. */
export function parseScalarValue(t: Tokenizer, field: FieldDescriptor): ScalarValue {
  if (field.kind === 'enum') return parseEnum(t, field);
  const scalar = field.scalar as ScalarType;
  switch (scalar) {
    case 'string':
      return parseString(t);
    case 'bool':
      return parseBool(t, field);
    case 'float':
    case 'double':
      return parseFloatValue(t);
    default:
      return parseInteger(t, scalar);
  }
}

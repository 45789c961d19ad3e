/**
 * A JSON parser for what `JSON.parse` cannot tell: the literal of a number as the client wrote it
 * (`1e-400` and `5.0` are not integers, `9007199254740993` is not a double), and the `NaN`,
 * `Inf`/`Infinity` literals that Triton's parser (rapidjson with kParseNanAndInfFlag) accepts.
 * It is slower than `JSON.parse` and only used when the fast parse cannot answer exactly.
 */

/** A number kept as written: any literal with a fraction, an exponent, 16+ digits, or NaN/Inf. */
export class JsonNumber {
  constructor(
    /** The literal as written (`1e-400`, `-0.0`, `NaN`, `-Inf`). */
    readonly text: string,
    /** Its value as a double. */
    readonly value: number,
  ) {}

  /** True for an integer literal (digits only, with an optional minus sign). */
  isIntegerLiteral(): boolean {
    return /^-?[0-9]+$/.test(this.text);
  }
}

export interface JsonTextOptions {
  /**
   * Keep number literals that a double may not hold exactly, or that are not plain integers, as
   * `JsonNumber` objects (plain integers of up to 15 digits stay numbers).
   */
  keepLiterals: boolean;
}

/** Nesting deeper than this is refused (a stack of thousands of `[` would overflow the parser). */
const MAX_DEPTH = 1000;

/** Characters that follow a digit in a number literal with a fraction or an exponent. */
const FRACTION_OR_EXPONENT = ['.', 'e', 'E'] as const;

/**
 * When false, no number literal of `text` has a fraction or an exponent (both need a digit right
 * before `.`, `e` or `E`): JSON.parse read every number as the integer literal it was. A true answer
 * may come from a string. A few native indexOf scans: cheap even for a large body.
 */
export function mayHoldFractionOrExponent(text: string): boolean {
  for (const ch of FRACTION_OR_EXPONENT) {
    for (let i = text.indexOf(ch, 1); i !== -1; i = text.indexOf(ch, i + 1)) {
      const c = text.charCodeAt(i - 1);
      if (c >= 0x30 && c <= 0x39) return true;
    }
  }
  return false;
}

/** 2^53: from here on, an integer literal may not be the double JSON.parse made of it. */
const TWO_POW_53 = 2 ** 53;

/**
 * True when `values` (JSON.parse output: nested arrays of values) holds an integer of magnitude
 * 2^53 or more, which JSON.parse may have rounded (9007199254740993 reads as ...992).
 */
export function holdsUnsafeInteger(values: unknown, depth = 0): boolean {
  if (!Array.isArray(values) || depth > 100) return false;
  for (let i = 0; i < values.length; i++) {
    const v: unknown = values[i];
    if (typeof v === 'number') {
      if (v >= TWO_POW_53 || v <= -TWO_POW_53) return true;
    } else if (Array.isArray(v) && holdsUnsafeInteger(v, depth + 1)) {
      return true;
    }
  }
  return false;
}

/**
 * Parses JSON text, accepting also `NaN`, `-NaN`, `Inf`, `-Inf`, `Infinity` and `-Infinity` as numbers.
 * Throws a SyntaxError naming the offset of the first error.
 */
export function parseJsonText(text: string, options: JsonTextOptions): unknown {
  const p = new Parser(text, options.keepLiterals);
  p.skipSpace();
  const value = p.value(0);
  p.skipSpace();
  if (p.at < text.length) p.fail('unexpected text after the JSON value');
  return value;
}

const SPECIAL_NUMBERS: readonly [string, number][] = [
  ['NaN', NaN],
  ['-NaN', NaN],
  ['Infinity', Infinity],
  ['Inf', Infinity],
  ['-Infinity', -Infinity],
  ['-Inf', -Infinity],
];

const ESCAPES: Readonly<Record<string, string>> = {
  '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t',
};

class Parser {
  at = 0;

  constructor(
    private readonly text: string,
    private readonly keepLiterals: boolean,
  ) {}

  fail(what: string): never {
    throw new SyntaxError(`${what} at offset ${this.at}`);
  }

  skipSpace(): void {
    const t = this.text;
    let i = this.at;
    for (;;) {
      const c = t.charCodeAt(i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
      else break;
    }
    this.at = i;
  }

  value(depth: number): unknown {
    const c = this.text[this.at];
    switch (c) {
      case '{':
        return this.object(depth + 1);
      case '[':
        return this.array(depth + 1);
      case '"':
        return this.string();
      case 't':
        return this.word('true', true);
      case 'f':
        return this.word('false', false);
      case 'n':
        return this.word('null', null);
      default:
        return this.number();
    }
  }

  private word<T>(word: string, value: T): T {
    if (!this.text.startsWith(word, this.at)) this.fail('invalid value');
    this.at += word.length;
    return value;
  }

  private object(depth: number): Record<string, unknown> {
    if (depth > MAX_DEPTH) this.fail(`nesting deeper than ${MAX_DEPTH} levels`);
    this.at++;
    const out: Record<string, unknown> = {};
    this.skipSpace();
    if (this.text[this.at] === '}') {
      this.at++;
      return out;
    }
    for (;;) {
      if (this.text[this.at] !== '"') this.fail('expected a member name');
      const key = this.string();
      this.skipSpace();
      if (this.text[this.at] !== ':') this.fail("expected ':'");
      this.at++;
      this.skipSpace();
      // defineProperty: a "__proto__" member is data, as with JSON.parse.
      Object.defineProperty(out, key, { value: this.value(depth), enumerable: true, writable: true, configurable: true });
      this.skipSpace();
      const next = this.text[this.at++];
      if (next === '}') return out;
      if (next !== ',') this.fail("expected ',' or '}'");
      this.skipSpace();
    }
  }

  private array(depth: number): unknown[] {
    if (depth > MAX_DEPTH) this.fail(`nesting deeper than ${MAX_DEPTH} levels`);
    this.at++;
    const out: unknown[] = [];
    this.skipSpace();
    if (this.text[this.at] === ']') {
      this.at++;
      return out;
    }
    for (;;) {
      out.push(this.value(depth));
      this.skipSpace();
      const next = this.text[this.at++];
      if (next === ']') return out;
      if (next !== ',') this.fail("expected ',' or ']'");
      this.skipSpace();
    }
  }

  private string(): string {
    const t = this.text;
    let i = this.at + 1;
    let out = '';
    let from = i;
    for (;;) {
      if (i >= t.length) this.fail('unterminated string');
      const c = t.charCodeAt(i);
      if (c === 0x22) break;
      if (c < 0x20) {
        this.at = i;
        this.fail('control character in string');
      }
      if (c !== 0x5c) {
        i++;
        continue;
      }
      out += t.slice(from, i);
      const e = t[i + 1];
      if (e === 'u') {
        const hex = t.slice(i + 2, i + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) {
          this.at = i;
          this.fail('invalid \\u escape');
        }
        out += String.fromCharCode(parseInt(hex, 16));
        i += 6;
      } else {
        const ch = e === undefined ? undefined : ESCAPES[e];
        if (ch === undefined) {
          this.at = i;
          this.fail('invalid escape');
        }
        out += ch;
        i += 2;
      }
      from = i;
    }
    out += t.slice(from, i);
    this.at = i + 1;
    return out;
  }

  private number(): number | JsonNumber {
    const t = this.text;
    const start = this.at;
    for (const [word, value] of SPECIAL_NUMBERS) {
      if (t.startsWith(word, start) && !isWordChar(t.charCodeAt(start + word.length))) {
        this.at += word.length;
        return this.keepLiterals ? new JsonNumber(word, value) : value;
      }
    }
    const m = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
    m.lastIndex = start;
    const found = m.exec(t);
    if (!found) this.fail('invalid value');
    const literal = found[0];
    this.at = start + literal.length;
    const value = Number(literal);
    if (!this.keepLiterals) return value;
    const plain = found[1] === undefined && found[2] === undefined && literal.replace('-', '').length <= 15;
    return plain ? value : new JsonNumber(literal, value);
  }
}

function isWordChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;
}

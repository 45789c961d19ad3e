/**
 * Tokenizer of the protobuf text format (config.pbtxt): identifiers, integers (decimal, 0x hex, leading-0
 * octal), floats (with optional f suffix), quoted strings with C escapes, and one-character symbols.
 * `#` starts a comment to end of line. Positions are 1-based line and column.
 */

export type TokenType = 'ident' | 'int' | 'float' | 'string' | 'symbol' | 'eof';

export interface Token {
  type: TokenType;
  /** Source text of the token (for strings, including quotes). */
  text: string;
  /** Decoded value of a string token. */
  value?: string;
  line: number;
  col: number;
}

/** A syntax error at a position; the parser turns it into Triton's `failed to read text proto` error. */
export class PbtxtSyntaxError extends Error {
  constructor(
    readonly line: number,
    readonly col: number,
    readonly detail: string,
  ) {
    super(`${line}:${col}: ${detail}`);
  }
}

const SYMBOLS = new Set(['{', '}', '<', '>', '[', ']', ':', ',', ';', '-']);
const SIMPLE_ESCAPES: Record<string, number> = {
  n: 0x0a, t: 0x09, r: 0x0d, a: 0x07, b: 0x08, f: 0x0c, v: 0x0b, '\\': 0x5c, "'": 0x27, '"': 0x22, '?': 0x3f,
};

const isDigit = (c: string): boolean => c >= '0' && c <= '9';
const isHex = (c: string): boolean => /^[0-9a-fA-F]$/.test(c);
const isOctal = (c: string): boolean => c >= '0' && c <= '7';
const isLetter = (c: string): boolean => /^[A-Za-z_]$/.test(c);
const isIdentChar = (c: string): boolean => /^[A-Za-z0-9_]$/.test(c);

export class Tokenizer {
  private pos = 0;
  private line = 1;
  private col = 1;
  /** The token under the cursor. */
  current: Token;

  constructor(private readonly text: string) {
    this.current = this.read();
  }

  advance(): Token {
    const previous = this.current;
    this.current = this.read();
    return previous;
  }

  private peekChar(offset = 0): string {
    return this.text[this.pos + offset] ?? '';
  }

  private bump(): string {
    const c = this.text[this.pos++];
    if (c === '\n') {
      this.line++;
      this.col = 1;
    } else {
      this.col++;
    }
    return c;
  }

  private skipSpaceAndComments(): void {
    for (;;) {
      const c = this.peekChar();
      if (c === '#') {
        while (this.pos < this.text.length && this.peekChar() !== '\n') this.bump();
      } else if (c !== '' && ' \t\n\r\v\f'.includes(c)) {
        this.bump();
      } else {
        return;
      }
    }
  }

  private read(): Token {
    this.skipSpaceAndComments();
    const line = this.line;
    const col = this.col;
    const start = this.pos;
    const c = this.peekChar();
    const make = (type: TokenType, value?: string): Token => {
      const tok: Token = { type, text: this.text.slice(start, this.pos), line, col };
      if (value !== undefined) tok.value = value;
      return tok;
    };
    if (c === '') return make('eof');
    if (isLetter(c)) {
      while (isIdentChar(this.peekChar())) this.bump();
      return make('ident');
    }
    if (isDigit(c) || (c === '.' && isDigit(this.peekChar(1)))) return make(this.readNumber(line, col));
    if (c === '"' || c === "'") return make('string', this.readString(line, col));
    if (SYMBOLS.has(c)) {
      this.bump();
      return make('symbol');
    }
    throw new PbtxtSyntaxError(line, col, `Unexpected character "${c}".`);
  }

  private readDigits(test: (c: string) => boolean): number {
    let n = 0;
    while (test(this.peekChar())) {
      this.bump();
      n++;
    }
    return n;
  }

  private readNumber(line: number, col: number): 'int' | 'float' {
    const first = this.bump();
    let type: 'int' | 'float' = 'int';
    if (first === '0' && (this.peekChar() === 'x' || this.peekChar() === 'X')) {
      this.bump();
      if (this.readDigits(isHex) === 0) throw new PbtxtSyntaxError(line, col, '"0x" must be followed by hex digits.');
    } else if (first === '0' && isDigit(this.peekChar())) {
      this.readDigits(isOctal);
      if (isDigit(this.peekChar())) throw new PbtxtSyntaxError(line, col, 'Numbers starting with leading zero must be in octal.');
    } else {
      type = this.readDecimalTail(first, line, col);
    }
    if (isIdentChar(this.peekChar()) || this.peekChar() === '.') {
      throw new PbtxtSyntaxError(this.line, this.col, 'Need space between number and identifier.');
    }
    return type;
  }

  /** Rest of a decimal number after its first character: fraction, exponent and `f` suffix. */
  private readDecimalTail(first: string, line: number, col: number): 'int' | 'float' {
    let isFloat = first === '.';
    this.readDigits(isDigit);
    if (!isFloat && this.peekChar() === '.') {
      this.bump();
      isFloat = true;
      this.readDigits(isDigit);
    }
    if (this.peekChar() === 'e' || this.peekChar() === 'E') {
      this.bump();
      if (this.peekChar() === '+' || this.peekChar() === '-') this.bump();
      if (this.readDigits(isDigit) === 0) throw new PbtxtSyntaxError(line, col, '"e" must be followed by exponent.');
      isFloat = true;
    }
    if (this.peekChar() === 'f' || this.peekChar() === 'F') {
      this.bump();
      isFloat = true;
    }
    return isFloat ? 'float' : 'int';
  }

  private readString(line: number, col: number): string {
    const quote = this.bump();
    const bytes: number[] = [];
    for (;;) {
      const c = this.peekChar();
      if (c === '' || c === '\n') throw new PbtxtSyntaxError(line, col, 'String literals cannot cross line boundaries.');
      this.bump();
      if (c === quote) break;
      if (c === '\\') this.readEscape(bytes);
      else bytes.push(...Buffer.from(this.withLowSurrogate(c), 'utf8'));
    }
    return Buffer.from(bytes).toString('utf8');
  }

  /** A high surrogate read alone is completed with its low half so that UTF-8 encoding keeps the character. */
  private withLowSurrogate(c: string): string {
    const code = c.charCodeAt(0);
    if (code < 0xd800 || code > 0xdbff || this.pos >= this.text.length) return c;
    return c + this.bump();
  }

  private readEscape(out: number[]): void {
    const line = this.line;
    const col = this.col - 1;
    const c = this.peekChar();
    if (c in SIMPLE_ESCAPES) {
      this.bump();
      out.push(SIMPLE_ESCAPES[c]);
    } else if (isOctal(c)) {
      let code = 0;
      for (let i = 0; i < 3 && isOctal(this.peekChar()); i++) code = code * 8 + Number(this.bump());
      out.push(code & 0xff);
    } else if (c === 'x' || c === 'X') {
      this.bump();
      out.push(parseInt(this.readHex(1, 2, line, col), 16));
    } else if (c === 'u' || c === 'U') {
      this.bump();
      const n = c === 'u' ? 4 : 8;
      const code = parseInt(this.readHex(n, n, line, col), 16);
      if (code > 0x10ffff) throw new PbtxtSyntaxError(line, col, 'Invalid escape sequence in string literal.');
      out.push(...Buffer.from(String.fromCodePoint(code), 'utf8'));
    } else {
      throw new PbtxtSyntaxError(line, col, 'Invalid escape sequence in string literal.');
    }
  }

  private readHex(min: number, max: number, line: number, col: number): string {
    let s = '';
    while (s.length < max && isHex(this.peekChar())) s += this.bump();
    if (s.length < min) throw new PbtxtSyntaxError(line, col, 'Invalid escape sequence in string literal.');
    return s;
  }
}

/**
 * Mutations of the coverage-guided fuzzer: a seeded PRNG and the byte-level havoc of AFL/libFuzzer
 * (bit and byte flips, interesting integers, inserts, deletes, copies, splices with other corpus
 * entries), plus the format's dictionary tokens and ASCII numbers swapped for edge values, which is
 * what reaches deep into text formats (JSON, pbtxt) quickly.
 */

/** mulberry32: small, fast, seedable; good enough to pick mutations. */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A uniform 32-bit unsigned integer. */
  u32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** An integer in [0, n) (0 when n <= 0). */
  below(n: number): number {
    return n <= 0 ? 0 : this.u32() % n;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.below(items.length)];
  }

  chance(p: number): boolean {
    return this.u32() / 0x1_0000_0000 < p;
  }
}

const INTERESTING_8 = [0, 1, 0x7f, 0x80, 0xff, 0x20, 0x22, 0x5c, 0x7b, 0x7d, 0x5b, 0x5d, 0x3a, 0x2c];
const INTERESTING_32 = [0, 1, 2, 7, 8, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffff8];
/** Numbers at the edges of what decoders convert: int32/int64/uint64 limits, 2^53, floats, signs. */
const INTERESTING_NUMBERS = [
  '0', '-0', '1', '-1', '2', '255', '256', '65535', '65536', '2147483647', '2147483648', '-2147483648', '4294967295',
  '4294967296', '9007199254740991', '9007199254740992', '9223372036854775807', '9223372036854775808',
  '-9223372036854775808', '18446744073709551615', '18446744073709551616', '1e308', '1e309', '-1e309', '5e-324',
  '3.4028235e38', '3.5e38', '65504', '65520', '0.1', '1e-7', '1.0', '1e2', '123456789012345678901234567890',
];

/** Everything the mutator needs to know of a format and the corpus it splices with. */
export interface MutationContext {
  maxLength: number;
  dictionary: readonly Uint8Array[];
  /** Another corpus entry to splice with (may be the same one). */
  other(): Uint8Array;
}

type Mutation = (rng: Rng, data: Uint8Array, ctx: MutationContext) => Uint8Array;

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function randomBytes(rng: Rng, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = rng.below(256);
  return out;
}

/** A chunk length: mostly short, sometimes up to `max`. */
function chunkLength(rng: Rng, max: number): number {
  if (max <= 1) return max;
  return 1 + (rng.chance(0.8) ? rng.below(Math.min(8, max)) : rng.below(max));
}

function insertAt(data: Uint8Array, at: number, bytes: Uint8Array): Uint8Array {
  return concat(data.subarray(0, at), bytes, data.subarray(at));
}

function overwriteAt(data: Uint8Array, at: number, bytes: Uint8Array): Uint8Array {
  const out = data.slice();
  out.set(bytes.subarray(0, Math.max(0, out.length - at)), at);
  return out;
}

function writeInt(rng: Rng, data: Uint8Array, width: 2 | 4): Uint8Array {
  if (data.length < width) return data;
  const out = data.slice();
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  const at = rng.below(data.length - width + 1);
  const value = rng.chance(0.7) ? rng.pick(INTERESTING_32) : rng.u32();
  const little = rng.chance(0.7);
  if (width === 2) view.setUint16(at, value & 0xffff, little);
  else view.setUint32(at, value >>> 0, little);
  return out;
}

const NUMBER_CHAR = /[0-9]/;

/** Replaces one ASCII number (digits with sign, point and exponent) by an edge value, or inserts one. */
const replaceNumber: Mutation = (rng, data) => {
  const text = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const starts: number[] = [];
  for (let i = 0; i < text.length; i++) {
    if (NUMBER_CHAR.test(String.fromCharCode(text[i])) && (i === 0 || !NUMBER_CHAR.test(String.fromCharCode(text[i - 1])))) starts.push(i);
  }
  const value = Buffer.from(rng.pick(INTERESTING_NUMBERS));
  if (starts.length === 0) return insertAt(data, rng.below(data.length + 1), value);
  let start = rng.pick(starts);
  if (start > 0 && text[start - 1] === 0x2d) start -= 1;
  let end = start + 1;
  while (end < text.length && /[0-9.eE+-]/.test(String.fromCharCode(text[end]))) end++;
  return concat(data.subarray(0, start), value, data.subarray(end));
};

const MUTATIONS: readonly Mutation[] = [
  // Bit flip.
  (rng, data) => {
    if (data.length === 0) return randomBytes(rng, 1);
    const out = data.slice();
    out[rng.below(out.length)] ^= 1 << rng.below(8);
    return out;
  },
  // Random or interesting byte.
  (rng, data) => {
    if (data.length === 0) return randomBytes(rng, 1);
    const out = data.slice();
    out[rng.below(out.length)] = rng.chance(0.5) ? rng.pick(INTERESTING_8) : rng.below(256);
    return out;
  },
  // Small add or subtract on a byte.
  (rng, data) => {
    if (data.length === 0) return data;
    const out = data.slice();
    const at = rng.below(out.length);
    out[at] = (out[at] + (rng.below(35) - 17)) & 0xff;
    return out;
  },
  (rng, data) => writeInt(rng, data, 2),
  (rng, data) => writeInt(rng, data, 4),
  // Delete a range.
  (rng, data) => {
    if (data.length === 0) return data;
    const n = chunkLength(rng, data.length);
    const at = rng.below(data.length - n + 1);
    return concat(data.subarray(0, at), data.subarray(at + n));
  },
  // Insert random bytes, or one byte repeated.
  (rng, data) => {
    const n = chunkLength(rng, 32);
    const bytes = rng.chance(0.5) ? randomBytes(rng, n) : new Uint8Array(n).fill(rng.pick(INTERESTING_8));
    return insertAt(data, rng.below(data.length + 1), bytes);
  },
  // Copy a chunk of the input elsewhere (inserted or overwriting).
  (rng, data) => {
    if (data.length === 0) return data;
    const n = chunkLength(rng, data.length);
    const from = rng.below(data.length - n + 1);
    const chunk = data.slice(from, from + n);
    const at = rng.below(data.length + 1);
    return rng.chance(0.5) ? insertAt(data, at, chunk) : overwriteAt(data, at, chunk);
  },
  // Dictionary token, inserted or overwriting.
  (rng, data, ctx) => {
    if (ctx.dictionary.length === 0) return data;
    const token = rng.pick(ctx.dictionary);
    const at = rng.below(data.length + 1);
    return rng.chance(0.6) ? insertAt(data, at, token) : overwriteAt(data, at, token);
  },
  // Splice: this entry's head with another's tail, or a chunk of another inserted.
  (rng, data, ctx) => {
    const other = ctx.other();
    if (other.length === 0) return data;
    if (rng.chance(0.5)) return concat(data.subarray(0, rng.below(data.length + 1)), other.subarray(rng.below(other.length)));
    const n = chunkLength(rng, other.length);
    const from = rng.below(other.length - n + 1);
    return insertAt(data, rng.below(data.length + 1), other.subarray(from, from + n));
  },
  replaceNumber,
  // Truncate.
  (rng, data) => data.subarray(0, rng.below(data.length + 1)),
];

/** One fuzz case from `data`: 1, 2, 4, 8 or 16 stacked mutations, clamped to `ctx.maxLength`. */
export function mutate(rng: Rng, data: Uint8Array, ctx: MutationContext): Uint8Array {
  let out = data;
  const rounds = 1 << rng.below(5);
  for (let i = 0; i < rounds; i++) out = rng.pick(MUTATIONS)(rng, out, ctx);
  return out.length > ctx.maxLength ? out.subarray(0, ctx.maxLength) : out;
}

/** Dictionary entries as bytes (strings as UTF-8). */
export function dictionaryOf(tokens: readonly (string | Uint8Array)[]): Uint8Array[] {
  return tokens.map((t) => (typeof t === 'string' ? new Uint8Array(Buffer.from(t, 'utf8')) : t));
}

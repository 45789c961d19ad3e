import { BYTES_ELEMENT_COST } from '@nereid/tensor';

/**
 * A scan of a ModelInferRequest's raw protobuf bytes that counts what decoding it will allocate,
 * before protobufjs decodes it (issue 16). protobufjs makes one object per embedded message, one
 * Buffer per `bytes` entry and one JS array slot (and, with `longs: String`, one string) per
 * repeated number: a 64 MiB message of empty `bytes_contents` entries (2 bytes each on the wire)
 * decodes to ~6 GB. The scan reads the wire format only (no allocation per field), as protobufjs 7's
 * reader and generated decoders read it: a known field is read by its number whatever its wire
 * type (a repeated number is packed when its wire type is 2, one element otherwise), an unknown one
 * is skipped by its wire type (groups included), a sub-message is read within its length. Every
 * occurrence counts, also those a later one replaces (their objects were made all the same).
 *
 * The decoded cost is an estimate of memory, measured on Node 20 (heap + external bytes per
 * element after protobufjs's decode, then Nereid's conversion to tensors): see the constants. A
 * BYTES input's elements, which Nereid makes one view each of raw contents (BYTES_ELEMENT_COST, as
 * over HTTP), count as many as its shape claims, at most one per 4 bytes of the message.
 */

/** An embedded message (inputs, outputs, map entries, their values, contents): protobufjs's object, 122-194 bytes measured. */
export const MESSAGE_COST = 256;
/** A `bytes` entry (bytes_contents, raw_input_contents): protobufjs's Buffer (106-194 bytes) and Nereid's view of it (~104). */
export const BYTES_ENTRY_COST = 256;
/** A repeated 32-bit or floating-point number or bool: a JS array slot (~10 bytes) and the typed array element (up to 8). */
export const NUMBER_COST = 16;
/** A repeated int64 / uint64 (contents and shapes): a string per element (`longs: String`), its slot and its typed element. */
export const LONG_COST = 48;
/** A string field (names, ids, datatypes, map keys): a string's header beyond its characters (counted at their length). */
export const STRING_COST = 32;

/** What a message decodes to, counted. */
export interface ScanCounts {
  /** Embedded message occurrences (each an object protobufjs makes). */
  messages: number;
  /** `bytes` entries: bytes_contents and raw_input_contents. */
  bytesEntries: number;
  /** Repeated 32-bit, float, double and bool elements. */
  numbers: number;
  /** Repeated int64 / uint64 elements (shapes included). */
  longs: number;
  /** String field occurrences. */
  strings: number;
  /**
   * BYTES elements the BYTES inputs' shapes claim (Nereid makes a view per element of raw contents),
   * each at most what the message's bytes can hold (4 bytes an element).
   */
  bytesElements: number;
  /** The estimated bytes of memory decoding takes beyond the message's own bytes. */
  cost: number;
  /** Where the last `model_name` (field 1) and `id` (field 3) lie, to name a refused request. */
  modelName?: [number, number];
  id?: [number, number];
}

/** The scan's one error: the bytes are not a message protobufjs would decode. */
export class WireScanError extends Error {
  constructor(message: string, readonly at: number) {
    super(`${message} at byte ${at}`);
    this.name = 'WireScanError';
  }
}

/** The scan stopped because the cost went over `limit` (the message is never decoded). */
export class ScanLimitError extends Error {
  constructor(
    /** What was counted when the cost went over (the rest of the message unscanned). */
    readonly counts: ScanCounts,
    readonly limit: number,
  ) {
    super(`decoded cost over ${limit}`);
    this.name = 'ScanLimitError';
  }
}

const enum Kind {
  Str,
  Bytes,
  Msg,
  Varint, // bool, int32, uint32
  Long, // int64, uint64 (varint)
  Fixed32, // float
  Fixed64, // double
}

interface Field {
  kind: Kind;
  /** For messages: the schema of the message. */
  schema?: Schema;
  /** A repeated number (packed or not). */
  repeated?: boolean;
  /** InferInputTensor's datatype (2) and shape (3), read for the BYTES elements a tensor claims. */
  tensor?: 'datatype' | 'shape';
}

type Schema = Readonly<Record<number, Field>>;

// InferParameter: oneof bool_param = 1, int64_param = 2, string_param = 3, double_param = 4, uint64_param = 5.
const PARAMETER: Schema = {
  1: { kind: Kind.Varint },
  2: { kind: Kind.Long },
  3: { kind: Kind.Str },
  4: { kind: Kind.Fixed64 },
  5: { kind: Kind.Long },
};
const MAP_ENTRY: Schema = { 1: { kind: Kind.Str }, 2: { kind: Kind.Msg, schema: PARAMETER } };
const CONTENTS: Schema = {
  1: { kind: Kind.Varint, repeated: true },
  2: { kind: Kind.Varint, repeated: true },
  3: { kind: Kind.Long, repeated: true },
  4: { kind: Kind.Varint, repeated: true },
  5: { kind: Kind.Long, repeated: true },
  6: { kind: Kind.Fixed32, repeated: true },
  7: { kind: Kind.Fixed64, repeated: true },
  8: { kind: Kind.Bytes, repeated: true },
};
const INPUT: Schema = {
  1: { kind: Kind.Str },
  2: { kind: Kind.Str, tensor: 'datatype' },
  3: { kind: Kind.Long, repeated: true, tensor: 'shape' },
  4: { kind: Kind.Msg, schema: MAP_ENTRY },
  5: { kind: Kind.Msg, schema: CONTENTS },
};
const OUTPUT: Schema = { 1: { kind: Kind.Str }, 2: { kind: Kind.Msg, schema: MAP_ENTRY } };
const REQUEST: Schema = {
  1: { kind: Kind.Str },
  2: { kind: Kind.Str },
  3: { kind: Kind.Str },
  4: { kind: Kind.Msg, schema: MAP_ENTRY },
  5: { kind: Kind.Msg, schema: INPUT },
  6: { kind: Kind.Msg, schema: OUTPUT },
  7: { kind: Kind.Bytes, repeated: true },
};

/** Whether `buf[at, stop)` is the text BYTES. */
function isBytes(buf: Uint8Array, at: number, stop: number): boolean {
  return stop - at === 5 && buf[at] === 0x42 && buf[at + 1] === 0x59 && buf[at + 2] === 0x54 && buf[at + 3] === 0x45 && buf[at + 4] === 0x53;
}

/** protobufjs's recursion limit (util.recursionLimit): groups nested deeper are refused. */
const RECURSION_LIMIT = 100;

/**
 * Reads as protobufjs 7's Reader and generated decoders read (src/reader.js, src/decoder.js of the
 * protobufjs @grpc/proto-loader uses), without making anything: `len` is the end of the message
 * being read, as the reader's `len` is.
 */
class Scanner {
  pos = 0;
  private len: number;
  readonly counts: ScanCounts = { messages: 0, bytesEntries: 0, numbers: 0, longs: 0, strings: 0, bytesElements: 0, cost: 0 };
  /** The input tensor being read: whether its datatype is BYTES, and its shape's element count so far. */
  private tensor: { bytes: boolean; count: number; zero: boolean; invalid: boolean } | undefined;

  constructor(
    private readonly buf: Uint8Array,
    private readonly limit: number,
  ) {
    this.len = buf.length;
  }

  private add(cost: number): void {
    this.counts.cost += cost;
    if (this.counts.cost > this.limit) throw new ScanLimitError(this.counts, this.limit);
  }

  private fail(message: string): never {
    throw new WireScanError(message, this.pos);
  }

  /** Reader.uint32 (tags, lengths, int32, uint32, bool): 1-5 bytes, or 10 (5 more skipped unread); at most 4 near the end. */
  private uint32(): number {
    const buf = this.buf;
    if (this.pos >= this.len) this.fail('index out of range');
    if (this.len - this.pos < 5 && buf[this.pos] >= 128) {
      let value = 0;
      for (let i = 0; i < 4; i++) {
        if (this.pos >= this.len) this.fail('index out of range');
        const b = buf[this.pos++];
        value = (value | ((b & 127) << (7 * i))) >>> 0;
        if (b < 128) return value;
      }
      this.fail('index out of range');
    }
    let value = 0;
    for (let i = 0; i < 5; i++) {
      const b = buf[this.pos++];
      value = (value | ((b & (i === 4 ? 15 : 127)) << (7 * i))) >>> 0;
      if (b < 128) return value;
    }
    if ((this.pos += 5) > this.len) {
      this.pos = this.len;
      this.fail('index out of range');
    }
    return value;
  }

  /** Reader.int64 / uint64 (readLongVarint): up to 10 bytes; near the end up to 4, the 4th read whatever it holds. */
  private long(): void {
    const buf = this.buf;
    let i = 0;
    if (this.len - this.pos > 4) {
      for (; i < 5; i++) if (buf[this.pos++] < 128) return;
    } else {
      for (; i < 3; i++) {
        if (this.pos >= this.len) this.fail('index out of range');
        if (buf[this.pos++] < 128) return;
      }
      this.pos++;
      return;
    }
    for (i = 0; i < 5; i++) {
      if (this.len - this.pos <= 4 && this.pos >= this.len) this.fail('index out of range');
      if (buf[this.pos++] < 128) return;
    }
    this.fail('invalid varint encoding');
  }

  /** Reader.bytes / string: a length, then that many bytes within the message. */
  private delimited(): [number, number] {
    const length = this.uint32();
    const start = this.pos;
    if (start + length > this.len) this.fail('index out of range');
    this.pos = start + length;
    return [start, this.pos];
  }

  private skip(n: number): void {
    if (this.pos + n > this.len) this.fail('index out of range');
    this.pos += n;
  }

  /** Reader.skipType. */
  private skipType(wireType: number, depth: number): void {
    if (depth > RECURSION_LIMIT) this.fail('maximum nesting depth exceeded');
    switch (wireType) {
      case 0:
        // Reader.skip(): a varint of any length.
        do if (this.pos >= this.len) this.fail('index out of range');
        while (this.buf[this.pos++] & 128);
        return;
      case 1:
        return this.skip(8);
      case 2:
        return this.skip(this.uint32());
      case 3:
        for (;;) {
          const type = this.uint32() & 7;
          if (type === 4) return;
          this.skipType(type, depth + 1);
        }
      case 5:
        return this.skip(4);
      default:
        this.fail(`invalid wire type ${wireType}`);
    }
  }

  /** A message of `schema` of `length` bytes from here (the reader's end meanwhile), or to the end (`top`). */
  message(schema: Schema, length: number | undefined, top: boolean): void {
    const outer = this.len;
    const end = length === undefined ? this.len : this.pos + length;
    if (end > this.len) this.fail('index out of range');
    this.len = end;
    if (schema === INPUT) this.tensor = { bytes: false, count: 1, zero: false, invalid: false };
    while (this.pos < end) {
      const tag = this.uint32();
      const field = schema[tag >>> 3];
      if (field === undefined) this.skipType(tag & 7, 0);
      else this.field(field, tag, top);
    }
    if (length !== undefined && this.pos !== end) this.fail('index out of range');
    this.len = outer;
    if (schema === INPUT) this.claimed();
  }

  /** The BYTES elements an input tensor read claims: its shape's count, at most what the message can hold. */
  private claimed(): void {
    const t = this.tensor!;
    this.tensor = undefined;
    if (!t.bytes || t.zero || t.invalid) return;
    const n = Math.min(t.count, Math.floor(this.buf.length / 4) + 1);
    this.counts.bytesElements += n;
    this.add(n * BYTES_ELEMENT_COST);
  }

  /** A shape dimension read from `start` to here (as Nereid reads it: the int64's string, then Number). */
  private dim(start: number): void {
    const t = this.tensor;
    if (t === undefined) return;
    let value = 0;
    for (let i = 0, p = start; p < this.pos && i < 10; i++, p++) {
      const b = this.buf[p] ?? 0;
      if (i < 9) value += (b & 127) * 2 ** (7 * i);
      else if (b & 1) value = Infinity;
    }
    // 2^63 and more is a negative int64: a shape Nereid refuses before making anything.
    if (value >= 2 ** 63) t.invalid = true;
    else if (value === 0) t.zero = true;
    else t.count = Math.min(t.count * value, Number.MAX_SAFE_INTEGER);
  }

  /** A known field, read by its number whatever its wire type (as protobufjs 7's decoders read it). */
  private field(field: Field, tag: number, top: boolean): void {
    switch (field.kind) {
      case Kind.Str: {
        // BufferReader.string: the length is cut at the message's end, never refused.
        const length = this.uint32();
        const at = this.pos;
        const stop = Math.min(at + length, this.len);
        this.pos = stop;
        this.counts.strings++;
        this.add(STRING_COST + (stop - at));
        if (top && tag >>> 3 === 1) this.counts.modelName = [at, stop];
        if (top && tag >>> 3 === 3) this.counts.id = [at, stop];
        if (field.tensor === 'datatype' && this.tensor) this.tensor.bytes = isBytes(this.buf, at, stop);
        return;
      }
      case Kind.Bytes:
        this.delimited();
        this.counts.bytesEntries++;
        this.add(BYTES_ENTRY_COST);
        return;
      case Kind.Msg:
        this.counts.messages++;
        this.add(MESSAGE_COST);
        this.message(field.schema!, this.uint32(), false);
        return;
      default: {
        const dims = field.tensor === 'shape';
        if (!field.repeated) return this.one(field.kind, false);
        if ((tag & 7) === 2) return this.packed(field.kind, dims);
        this.one(field.kind, dims);
        this.counted(field.kind, 1);
      }
    }
  }

  /** One number of `kind`, as its type reads it (`dim`: a shape's dimension, kept). */
  private one(kind: Kind, dim: boolean): void {
    if (kind === Kind.Fixed32) this.skip(4);
    else if (kind === Kind.Fixed64) this.skip(8);
    else if (kind === Kind.Long) {
      const start = this.pos;
      this.long();
      if (dim) this.dim(start);
    } else this.uint32();
  }

  /** A packed repeated number: a length, then elements read while before its end, which they must meet exactly. */
  private packed(kind: Kind, dims: boolean): void {
    const end = this.uint32() + this.pos;
    if (end > this.len) this.fail('index out of range');
    const outer = this.len;
    this.len = end;
    let n = 0;
    if (kind === Kind.Fixed32 || kind === Kind.Fixed64) {
      const width = kind === Kind.Fixed32 ? 4 : 8;
      if ((end - this.pos) % width !== 0) this.fail('index out of range');
      n = (end - this.pos) / width;
      this.pos = end;
    } else {
      while (this.pos < end) {
        this.one(kind, dims);
        n++;
      }
    }
    if (this.pos !== end) this.fail('index out of range');
    this.len = outer;
    this.counted(kind, n);
  }

  private counted(kind: Kind, n: number): void {
    if (kind === Kind.Long) {
      this.counts.longs += n;
      this.add(n * LONG_COST);
    } else {
      this.counts.numbers += n;
      this.add(n * NUMBER_COST);
    }
  }
}

/**
 * Counts what decoding `bytes` as a ModelInferRequest allocates. Throws ScanLimitError as soon as
 * the cost passes `limit` (the rest is not read), WireScanError when the bytes are not a message
 * protobufjs would decode; nothing else.
 */
export function scanInferRequest(bytes: Uint8Array, limit = Infinity): ScanCounts {
  const scanner = new Scanner(bytes, limit);
  try {
    scanner.message(REQUEST, undefined, true);
  } catch (e) {
    if (e instanceof WireScanError || e instanceof ScanLimitError) throw e;
    // A stack overflow cannot happen (depth is bounded); anything else is the scan's own fault.
    throw new WireScanError(`scan failed (${(e as Error).message})`, scanner.pos);
  }
  return scanner.counts;
}

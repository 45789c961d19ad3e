/**
 * Bounds on what an error message may repeat. A message that echoes a client's 1 MB input name
 * over gRPC travels in the `grpc-message` trailer, which clients refuse past their metadata limit
 * (8 KiB by default in gRPC's C core): the client then reports RESOURCE_EXHAUSTED instead of the
 * error. Client text is clipped where it is put into a message (`echo`), and every message is
 * clipped once more when the error is made (`capMessage`, called by InferenceError's constructor).
 *
 * This module imports nothing, so every lib (tensor included) can use it without an import cycle.
 */

/** Most characters of one piece of client text an error message repeats. */
export const ECHO_LIMIT = 256;

/**
 * Most "wire characters" of a whole message: its length once percent-encoded as grpc-js encodes
 * `grpc-message` (encodeURI: ASCII letters, digits and `-_.!~*'();/?:@&=+$,#` count 1, any other
 * byte of the UTF-8 text counts 3). Half of gRPC's default 8 KiB metadata limit.
 */
export const MESSAGE_LIMIT = 4096;

const ELLIPSIS = '...';

/** Lone UTF-16 surrogates (from JSON `\ud800` escapes) cannot be UTF-8 encoded nor encodeURI'd. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Cut at `at` code units, one less when that would split a surrogate pair. */
function cutAt(text: string, at: number): string {
  const code = text.charCodeAt(at - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? at - 1 : at);
}

/**
 * Client text (a tensor or model name, a request id, a header value, a datatype...) as an error
 * message repeats it: at most ECHO_LIMIT characters, then `...`; lone surrogates become U+FFFD.
 */
export function echo(text: unknown): string {
  let s = typeof text === 'string' ? text : String(text);
  if (s.length > ECHO_LIMIT) s = cutAt(s, ECHO_LIMIT) + ELLIPSIS;
  return s.replace(LONE_SURROGATE, '\uFFFD');
}

/** Characters encodeURI leaves as they are. */
function isUriPlain(c: number): boolean {
  return (
    (c >= 0x61 && c <= 0x7a) || // a-z
    (c >= 0x41 && c <= 0x5a) || // A-Z
    (c >= 0x30 && c <= 0x39) || // 0-9
    "-_.!~*'();/?:@&=+$,#".includes(String.fromCharCode(c))
  );
}

/** Wire characters of the UTF-16 code unit at `i` (a surrogate pair counts on its high half). */
function weightAt(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c < 0x80) return isUriPlain(c) ? 1 : 3;
  if (c < 0x800) return 6;
  if (c >= 0xd800 && c <= 0xdbff) return 12;
  if (c >= 0xdc00 && c <= 0xdfff) return 0;
  return 9;
}

/** A message cut to MESSAGE_LIMIT wire characters (see above), ending in `...` when cut. */
export function capMessage(message: string): string {
  // No code unit weighs more than 9: shorter messages cannot be over the limit.
  if (message.length * 9 <= MESSAGE_LIMIT) return message;
  const budget = MESSAGE_LIMIT - ELLIPSIS.length;
  let used = 0;
  for (let i = 0; i < message.length; i++) {
    used += weightAt(message, i);
    if (used > budget) {
      // Over the budget at i: is the whole message within the limit after all?
      let total = used;
      for (let j = i + 1; j < message.length && total <= MESSAGE_LIMIT; j++) total += weightAt(message, j);
      return total <= MESSAGE_LIMIT ? message : message.slice(0, i) + ELLIPSIS;
    }
  }
  return message;
}

/**
 * C0 controls (newline, carriage return, escape, NUL...), DEL, C1 controls and the Unicode line and
 * paragraph separators: characters that end a log line or drive a terminal. Tab is left alone.
 */
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u2028\u2029]/;
const CONTROL_ALL = new RegExp(CONTROL.source, 'g');

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r' };

export function hasControlCharacters(text: string): boolean {
  return CONTROL.test(text);
}

/** `text` with each control character written as an escape (`\n`, `\r`, `\x1b`, `\u2028`): one line, inert. */
export function escapeControlCharacters(text: string): string {
  if (!CONTROL.test(text)) return text;
  return text.replace(CONTROL_ALL, (c) => {
    const named = NAMED[c];
    if (named !== undefined) return named;
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

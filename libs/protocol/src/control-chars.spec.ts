import { escapeControlCharacters, hasControlCharacters } from './control-chars';

describe('control characters', () => {
  it('are found and escaped so that a text stays one line', () => {
    expect(hasControlCharacters('plain text\twith a tab')).toBe(false);
    for (const c of ['\n', '\r', '\0', '\x1b', '\x7f', '\x85', '\u2028', '\u2029']) expect(hasControlCharacters(`a${c}b`)).toBe(true);
    expect(escapeControlCharacters('m\nI0101 00:00:00.000000 1 nereid] forged\r\x1b[31m\u2028')).toBe(
      'm\\nI0101 00:00:00.000000 1 nereid] forged\\r\\x1b[31m\\u2028',
    );
    expect(escapeControlCharacters('unchanged\ttext')).toBe('unchanged\ttext');
  });
});

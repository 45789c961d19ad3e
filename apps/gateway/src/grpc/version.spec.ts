import { parseModelVersion } from './version';

describe('parseModelVersion', () => {
  it('maps "" to -1 (server picks)', () => expect(parseModelVersion('')).toBe(-1));
  it('parses integers', () => {
    expect(parseModelVersion('1')).toBe(1);
    expect(parseModelVersion('42')).toBe(42);
  });
  it.each(['abc', '1.5', ' 1', '1x'])('rejects %j with INVALID_ARG', (s) => {
    expect(() => parseModelVersion(s)).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARG',
        message: `failed to get model version from specified version string '${s}' (details: stol), version should be an integral value > 0`,
      }),
    );
  });
  it('rejects a negative version in Triton words', () => {
    expect(() => parseModelVersion('-1')).toThrow(
      expect.objectContaining({ code: 'INVALID_ARG', message: "invalid model version specified '-1' , version should be an integral value > 0" }),
    );
  });
});

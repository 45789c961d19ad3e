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
        message: expect.stringContaining(`failed to get model version from specified version string '${s}'`),
      }),
    );
  });
});

import { versionOf } from './model-control-bridge';

describe('model management versions', () => {
  it("read as the python backend reads them: '' for the server's choice, else an integer >= 0", () => {
    expect(versionOf('')).toBe(-1);
    expect(versionOf('3')).toBe(3);
    expect(versionOf('0')).toBe(0);
    expect(() => versionOf('x')).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARG',
        message: "failed to get model version from specified version string 'x' (details: stol), version should be an integral value > 0",
      }),
    );
    expect(() => versionOf('-2')).toThrow(
      expect.objectContaining({ message: "failed to get model version from specified version string '-2', version should be an integral value > 0" }),
    );
  });
});

import { checkModelName, modelNameProblem } from './model-name';

describe('model names', () => {
  it('accepts names that are one directory entry', () => {
    for (const name of ['simple', 'add_sub', 'model.onnxruntime', 'a b', 'ünïcödé', 'x'.repeat(255), '...']) {
      expect(modelNameProblem(name)).toBeUndefined();
    }
  });

  it("refuses empty names and path traversal with Triton's words", () => {
    expect(modelNameProblem('')).toBe('Model name cannot be empty. Please enter a valid name to deploy.');
    expect(modelNameProblem('  ')).toBe('Model name cannot be empty. Please enter a valid name to deploy.');
    for (const name of ['..', '.', '../../etc', 'a/b', '/abs', 'a\\..\\b']) {
      expect(modelNameProblem(name)).toBe(`invalid model name '${name}', model name must not contain path traversal characters`);
    }
  });

  it('refuses control characters, showing them escaped', () => {
    expect(modelNameProblem('m\nI0101 forged')).toBe("invalid model name 'm\\nI0101 forged', model name must not contain control characters");
    for (const name of ['a\0b', 'a\rb', 'a\x1b[31m', 'a\x7f', 'a\u2028']) expect(modelNameProblem(name)).toMatch(/control characters$/);
  });

  it('refuses names longer than a directory entry can be', () => {
    expect(modelNameProblem('x'.repeat(256))).toBe('invalid model name, model name must not be longer than 255 bytes');
    expect(modelNameProblem('é'.repeat(128))).toMatch(/longer than 255 bytes/);
  });

  it('checkModelName throws INVALID_ARG', () => {
    expect(() => checkModelName('../x')).toThrow(expect.objectContaining({ code: 'INVALID_ARG' }));
    expect(() => checkModelName('ok')).not.toThrow();
  });
});

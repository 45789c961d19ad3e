import { loadOptionsOf, unloadDependentsOf } from './repository-handlers';

describe('repository parameter conversion', () => {
  it('maps config and file: parameters to LoadOptions', () => {
    const file = Buffer.from([1, 2, 3]);
    expect(loadOptionsOf({})).toEqual({});
    expect(
      loadOptionsOf({
        config: { string_param: '{"backend":"onnxruntime"}', parameter_choice: 'string_param' },
        'file:1/model.onnx': { bytes_param: file, parameter_choice: 'bytes_param' },
      }),
    ).toEqual({ config: '{"backend":"onnxruntime"}', files: new Map([['file:1/model.onnx', file]]) });
  });
  it('rejects wrong value types with Triton wording', () => {
    expect(() => loadOptionsOf({ config: { bytes_param: Buffer.from('x'), parameter_choice: 'bytes_param' } })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARG', message: "invalid value type for load parameter 'config', expected string_param." }),
    );
    expect(() => loadOptionsOf({ 'file:1/a': { string_param: 'x', parameter_choice: 'string_param' } })).toThrow(
      expect.objectContaining({ message: "invalid value type for load parameter 'file:1/a', expected bytes_param." }),
    );
    for (const key of ['unload_dependents', '__proto__', 'constructor', 'toString']) {
      const params = Object.defineProperty({}, key, { value: { string_param: 'x', parameter_choice: 'string_param' }, enumerable: true });
      expect(() => loadOptionsOf(params)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARG', message: `unrecognized load parameter '${key}'.` }),
      );
    }
  });
  it('reads unload_dependents', () => {
    expect(unloadDependentsOf({})).toBe(false);
    expect(unloadDependentsOf({ unload_dependents: { bool_param: true, parameter_choice: 'bool_param' } })).toBe(true);
    expect(() => unloadDependentsOf({ unload_dependents: { int64_param: '1', parameter_choice: 'int64_param' } })).toThrow(
      expect.objectContaining({ message: "invalid value type for 'unload_dependents' parameter, expected bool_param." }),
    );
  });
});

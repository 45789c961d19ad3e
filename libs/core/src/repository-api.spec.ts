import { GRPC_REPOSITORY_WORDS, HTTP_REPOSITORY_WORDS } from './repository-api-words';
import { checkJsonLoadValues, loadOptionsOf, parametersFromJson, unloadDependentsOf, type RepositoryParameter } from './repository-api';

const params = (entries: [string, RepositoryParameter][]) => new Map(entries);

describe('repository API parameters', () => {
  it('map config and file: parameters to LoadOptions, file names kept as sent', () => {
    const file = new Uint8Array([1, 2, 3]);
    expect(loadOptionsOf(new Map(), GRPC_REPOSITORY_WORDS)).toEqual({});
    const options = loadOptionsOf(
      params([
        ['config', { type: 'string', value: '{"backend":"onnxruntime"}' }],
        ['file:1/model.onnx', { type: 'bytes', value: file }],
      ]),
      GRPC_REPOSITORY_WORDS,
    );
    expect(options).toEqual({ config: '{"backend":"onnxruntime"}', files: new Map([['file:1/model.onnx', file]]) });
  });

  it("refuse wrong types and unknown keys in each protocol's words", () => {
    const wrongConfig = params([['config', { type: 'bytes', value: new Uint8Array(1) }]]);
    const wrongFile = params([['file:1/a', { type: 'string', value: 'x' }]]);
    const unknown = params([['__proto__', { type: 'string', value: 'x' }]]);
    expect(() => loadOptionsOf(wrongConfig, GRPC_REPOSITORY_WORDS)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARG', message: "invalid value type for load parameter 'config', expected string_param." }),
    );
    expect(() => loadOptionsOf(wrongFile, GRPC_REPOSITORY_WORDS)).toThrow(
      expect.objectContaining({ message: "invalid value type for load parameter 'file:1/a', expected bytes_param." }),
    );
    expect(() => loadOptionsOf(unknown, GRPC_REPOSITORY_WORDS)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARG', message: "unrecognized load parameter '__proto__'." }),
    );
    expect(() => loadOptionsOf(unknown, HTTP_REPOSITORY_WORDS)).toThrow(
      expect.objectContaining({ code: 'INTERNAL', message: 'unexpected error on creating Triton parameter' }),
    );
  });

  it('read unload_dependents as a boolean', () => {
    expect(unloadDependentsOf(new Map(), GRPC_REPOSITORY_WORDS)).toBe(false);
    expect(unloadDependentsOf(params([['unload_dependents', { type: 'bool', value: true }]]), GRPC_REPOSITORY_WORDS)).toBe(true);
    const wrong = params([['unload_dependents', { type: 'int64', value: '1' }]]);
    expect(() => unloadDependentsOf(wrong, GRPC_REPOSITORY_WORDS)).toThrow(
      expect.objectContaining({ message: "invalid value type for 'unload_dependents' parameter, expected bool_param." }),
    );
    expect(() => unloadDependentsOf(wrong, HTTP_REPOSITORY_WORDS)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARG', message: "Unable to parse 'unload_dependents': attempt to access JSON non-boolean as boolean" }),
    );
  });

  it('take JSON parameters: file: values are base64, every load value must be a string', () => {
    const json = JSON.parse('{"config":"{}","file:1/a":"aGk=","__proto__":"x","unload_dependents":true}');
    const parsed = parametersFromJson(json);
    expect([...parsed.keys()]).toEqual(['config', 'file:1/a', '__proto__', 'unload_dependents']);
    expect(parsed.get('file:1/a')).toEqual({ type: 'bytes', value: Buffer.from('hi') });
    expect(parsed.get('unload_dependents')).toEqual({ type: 'bool', value: true });
    expect(() => parametersFromJson([1])).toThrow(expect.objectContaining({ message: "'parameters' must be a JSON object" }));
    expect(() => checkJsonLoadValues({ 'file:1/a': 3 }, HTTP_REPOSITORY_WORDS)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARG', message: "invalid value type for load parameter 'file:1/a', expected a string." }),
    );
  });
});

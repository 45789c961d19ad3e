import { repositoryParameters } from './repository-handlers';

describe('gRPC repository parameters', () => {
  it('take the type of the oneof member that was set, keyed as sent', () => {
    const file = Buffer.from([1, 2, 3]);
    const params = Object.defineProperty(
      {
        config: { string_param: '{}', parameter_choice: 'string_param' as const },
        'file:1/model.onnx': { bytes_param: file, parameter_choice: 'bytes_param' as const },
        unload_dependents: { bool_param: true, parameter_choice: 'bool_param' as const },
        n: { int64_param: '7', parameter_choice: 'int64_param' as const },
        empty: {},
      },
      '__proto__',
      { value: { string_param: 'x', parameter_choice: 'string_param' }, enumerable: true },
    );
    expect(repositoryParameters(params)).toEqual(
      new Map<string, unknown>([
        ['config', { type: 'string', value: '{}' }],
        ['file:1/model.onnx', { type: 'bytes', value: file }],
        ['unload_dependents', { type: 'bool', value: true }],
        ['n', { type: 'int64', value: '7' }],
        ['empty', { type: 'other' }],
        ['__proto__', { type: 'string', value: 'x' }],
      ]),
    );
  });
});

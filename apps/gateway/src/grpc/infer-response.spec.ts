import { encodeInferResponse } from './infer-response';

describe('encodeInferResponse', () => {
  it('puts every output in raw_output_contents, in order, without copying', () => {
    const sum = new Int32Array([1, 2, 3]);
    const msg = encodeInferResponse({
      id: 'x',
      modelName: 'simple',
      modelVersion: '1',
      outputs: [
        { name: 'OUTPUT0', datatype: 'INT32', shape: [1, 3], data: sum },
        { name: 'S', datatype: 'BYTES', shape: [2], data: [Buffer.from('ab'), Buffer.from('')] },
      ],
    });
    expect(msg).toMatchObject({
      model_name: 'simple',
      model_version: '1',
      id: 'x',
      outputs: [
        { name: 'OUTPUT0', datatype: 'INT32', shape: [1, 3] },
        { name: 'S', datatype: 'BYTES', shape: [2] },
      ],
    });
    expect(msg.parameters).toBeUndefined();
    expect(msg.raw_output_contents[0].buffer).toBe(sum.buffer);
    expect(Buffer.from(msg.raw_output_contents[0])).toEqual(Buffer.from(sum.buffer));
    expect(Buffer.from(msg.raw_output_contents[1])).toEqual(Buffer.from([2, 0, 0, 0, 97, 98, 0, 0, 0, 0]));
  });

  it('merges response parameters with the stream flags', () => {
    const msg = encodeInferResponse(
      { id: '', modelName: 'm', modelVersion: '2', outputs: [], parameters: { a: 1 } },
      { triton_final_response: { bool_param: true } },
    );
    expect(msg.parameters).toEqual({ a: { int64_param: 1 }, triton_final_response: { bool_param: true } });
  });
});

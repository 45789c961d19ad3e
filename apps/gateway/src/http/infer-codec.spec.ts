import type { InferenceResponse } from '@nereid/protocol';
import { decodeInferRequest, encodeInferResponseText, type OutputForm } from './infer-codec';
import { errorOf } from '../../../../test/helpers/inference-error';

const decode = (json: string) => decodeInferRequest(Buffer.from(json), undefined, 'm', -1);

describe('decodeInferRequest: numbers as the client wrote them', () => {
  it('reads 64-bit integer data and a uint64 sequence_id beyond 2^53 exactly', () => {
    const { request } = decode(
      '{"parameters":{"sequence_id":18446744073709551615,"priority":1,"custom":2.5},' +
        '"inputs":[{"name":"A","datatype":"INT64","shape":[2],"data":[9007199254740993,-9223372036854775808]},' +
        '{"name":"B","datatype":"FP64","shape":[1],"data":[0.1]}]}',
    );
    expect(request.sequenceId).toBe(2n ** 64n - 1n);
    expect(request.priority).toBe(1);
    expect(request.parameters).toEqual({ custom: 2.5 });
    expect(request.inputs[0].data).toEqual(new BigInt64Array([9007199254740993n, -(2n ** 63n)]));
    expect(request.inputs[1].data).toEqual(new Float64Array([0.1]));
  });

  it("refuses 1e-400 for an INT32 tensor with Triton's words (JSON.parse reads it as 0)", () => {
    const e = errorOf(() => decode('{"inputs":[{"name":"A","datatype":"INT32","shape":[1],"data":[1e-400]}]}'));
    expect(e.code).toBe('INVALID_ARG');
    expect(e.message).toBe(
      "Unable to parse 'data' for input 'A' for model 'm': attempt to access JSON non-signed-integer as signed-integer: element 0 must be an integer in [-2147483648, 2147483647] for datatype INT32, got 1e-400",
    );
  });

  it('reads NaN and Infinity literals as Triton does, and still refuses broken JSON', () => {
    const { request } = decode('{"inputs":[{"name":"A","datatype":"FP32","shape":[3],"data":[NaN,-Infinity,Inf]}]}');
    expect(Array.from(request.inputs[0].data as Float32Array)).toEqual([NaN, -Infinity, Infinity]);
    expect(errorOf(() => decode('{"inputs":[}')).message).toMatch(/^failed to parse the request JSON buffer/);
  });

  it('refuses a JSON part that is not UTF-8 text', () => {
    const body = Buffer.concat([Buffer.from('{"inputs":[{"name":"A","datatype":"BYTES","shape":[1],"data":["'), Buffer.from([0xff]), Buffer.from('"]}]}')]);
    const e = errorOf(() => decodeInferRequest(body, undefined, 'm', -1));
    expect(e.message).toBe(
      'failed to parse the request JSON buffer: it is not valid UTF-8 text (send BYTES that are not UTF-8 text in the binary data format)',
    );
  });
});

describe('encodeInferResponseText', () => {
  const response = (outputs: InferenceResponse['outputs']): InferenceResponse => ({ id: 'r1', modelName: 'm', modelVersion: '1', outputs });
  const json: OutputForm = { defaultBinary: false, binary: new Map() };

  it('writes data exactly and keeps the response shape', () => {
    const r = encodeInferResponseText(
      response([
        { name: 'I', datatype: 'UINT64', shape: [1], data: new BigUint64Array([2n ** 64n - 1n]) },
        { name: 'F', datatype: 'FP32', shape: [3], data: new Float32Array([-0, NaN, Infinity]) },
        { name: 'B', datatype: 'BYTES', shape: [1], data: [new Uint8Array([0x61, 0])] },
      ]),
      json,
    );
    expect(r.binary).toEqual([]);
    expect(r.json).toBe(
      '{"id":"r1","model_name":"m","model_version":"1","outputs":[' +
        '{"name":"I","datatype":"UINT64","shape":[1],"data":[18446744073709551615]},' +
        '{"name":"F","datatype":"FP32","shape":[3],"data":[-0.0,NaN,Infinity]},' +
        '{"name":"B","datatype":"BYTES","shape":[1],"data":["a\\u0000"]}]}',
    );
  });

  it('writes binary outputs as binary_data_size and their bytes', () => {
    const r = encodeInferResponseText(response([{ name: 'H', datatype: 'FP16', shape: [1], data: new Uint16Array([0x3c00]) }]), {
      defaultBinary: true,
      binary: new Map(),
    });
    expect(r.json).toBe('{"id":"r1","model_name":"m","model_version":"1","outputs":[{"name":"H","datatype":"FP16","shape":[1],"parameters":{"binary_data_size":2}}]}');
    expect(r.binary.map((b) => Array.from(b))).toEqual([[0x00, 0x3c]]);
  });

  it('throws for an FP16 output asked for as JSON (the caller answers 400)', () => {
    const e = errorOf(() => encodeInferResponseText(response([{ name: 'H', datatype: 'FP16', shape: [1], data: new Uint16Array([0x3c00]) }]), json));
    expect(e).toMatchObject({ code: 'INVALID_ARG', message: 'sending FP16 data via JSON is not supported. Please use the binary data format for output' });
  });
});

import { decodeInferRequest } from './infer-request';
import type { WireInferInputTensor, WireModelInferRequest } from './wire-types';

function int32Bytes(values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeInt32LE(v, i * 4));
  return b;
}

function input(name: string, shape: string[], extra: Partial<WireInferInputTensor> = {}): WireInferInputTensor {
  return { name, datatype: 'INT32', shape, parameters: {}, contents: null, ...extra };
}

function request(extra: Partial<WireModelInferRequest> = {}): WireModelInferRequest {
  return {
    model_name: 'simple',
    model_version: '',
    id: 'r1',
    parameters: {},
    inputs: [],
    outputs: [],
    raw_input_contents: [],
    ...extra,
  };
}

const invalid = (message: string) => expect.objectContaining({ code: 'INVALID_ARG', message });

describe('decodeInferRequest', () => {
  it('decodes raw_input_contents in input order as views', () => {
    const raw0 = int32Bytes([1, 2, 3, 4]);
    const raw1 = int32Bytes([5, 6, 7, 8]);
    const { request: r } = decodeInferRequest(
      request({ inputs: [input('A', ['1', '4']), input('B', ['1', '4'])], raw_input_contents: [raw0, raw1] }),
    );
    expect(r).toMatchObject({ id: 'r1', modelName: 'simple', modelVersion: -1 });
    expect(r.outputs).toBeUndefined();
    expect(r.inputs.map((t) => [t.name, t.datatype, t.shape])).toEqual([
      ['A', 'INT32', [1, 4]],
      ['B', 'INT32', [1, 4]],
    ]);
    expect(Array.from(r.inputs[0].data as Int32Array)).toEqual([1, 2, 3, 4]);
    expect(Array.from(r.inputs[1].data as Int32Array)).toEqual([5, 6, 7, 8]);
  });

  it('reads misaligned raw Buffers correctly (protobuf fields start at any offset)', () => {
    const backing = Buffer.concat([Buffer.from([0xee]), int32Bytes([10, -20, 30, 40])]);
    const raw = backing.subarray(1);
    const { request: r } = decodeInferRequest(request({ inputs: [input('A', ['4'])], raw_input_contents: [raw] }));
    expect(Array.from(r.inputs[0].data as Int32Array)).toEqual([10, -20, 30, 40]);
  });

  it('decodes typed contents, including BYTES', () => {
    const { request: r } = decodeInferRequest(
      request({
        model_version: '3',
        inputs: [
          input('A', ['2'], { contents: { int_contents: [7, -8] } }),
          input('S', ['2'], { datatype: 'BYTES', contents: { bytes_contents: [Buffer.from('hi'), Buffer.from('')] } }),
        ],
      }),
    );
    expect(r.modelVersion).toBe(3);
    expect(Array.from(r.inputs[0].data as Int32Array)).toEqual([7, -8]);
    expect((r.inputs[1].data as Uint8Array[]).map((b) => Buffer.from(b).toString())).toEqual(['hi', '']);
  });

  it('decodes BYTES raw contents with 4-byte LE length prefixes', () => {
    const raw = Buffer.concat([Buffer.from([3, 0, 0, 0]), Buffer.from('abc'), Buffer.from([0, 0, 0, 0])]);
    const { request: r } = decodeInferRequest(
      request({ inputs: [input('S', ['2'], { datatype: 'BYTES' })], raw_input_contents: [raw] }),
    );
    expect((r.inputs[0].data as Uint8Array[]).map((b) => Buffer.from(b).toString())).toEqual(['abc', '']);
  });

  it('rejects raw and typed contents together', () => {
    const msg = request({
      inputs: [input('A', ['1'], { contents: { int_contents: [1] } })],
      raw_input_contents: [int32Bytes([1])],
    });
    expect(() => decodeInferRequest(msg)).toThrow(
      invalid("contents field must not be specified when using raw_input_contents for 'A' for model 'simple'"),
    );
  });

  it("answers Triton's words when raw contents come with typed contents in fewer raw entries than inputs", () => {
    // What Triton's example grpc_explicit_int_content_client.py sends and matches on.
    const msg = request({
      inputs: [input('INPUT0', ['8'], { contents: { int_contents: [1, 2, 3, 4, 5, 6, 7, 8] } }), input('INPUT1', ['8'], { contents: { int_contents: [1, 2, 3, 4, 5, 6, 7, 8] } })],
      raw_input_contents: [int32Bytes([1, 2, 3, 4, 5, 6, 7, 8])],
    });
    expect(() => decodeInferRequest(msg)).toThrow(
      invalid("contents field must not be specified when using raw_input_contents for 'INPUT0' for model 'simple'"),
    );
    const empty = request({ inputs: [input('A', ['1'], { contents: {} })], raw_input_contents: [int32Bytes([1])] });
    expect(() => decodeInferRequest(empty)).toThrow(
      invalid("contents field must not be specified when using raw_input_contents for 'A' for model 'simple'"),
    );
  });

  it('rejects fewer raw entries than inputs without contents, and extra entries', () => {
    const fewer = request({ inputs: [input('A', ['1']), input('B', ['1'])], raw_input_contents: [int32Bytes([1])] });
    expect(() => decodeInferRequest(fewer)).toThrow(invalid("unable to find data for input tensor 'B' for model 'simple' in request."));
    const none = request({ inputs: [input('A', ['1'])] });
    expect(() => decodeInferRequest(none)).toThrow(invalid("unable to find data for input tensor 'A' for model 'simple' in request."));
    const more = request({ inputs: [input('A', ['1'])], raw_input_contents: [int32Bytes([1]), int32Bytes([2])] });
    expect(() => decodeInferRequest(more)).toThrow(
      invalid("expected 1 raw_input_contents entries (one per input without contents) for model 'simple', got 2"),
    );
  });

  it('rejects a raw byte size that does not match the shape', () => {
    const msg = request({ inputs: [input('A', ['1', '16'])], raw_input_contents: [int32Bytes([1, 2])] });
    expect(() => decodeInferRequest(msg)).toThrow(
      invalid("input byte size mismatch for input 'A' for model 'simple'. Expected 64, got 8"),
    );
  });

  it('rejects typed contents of the wrong type', () => {
    const msg = request({ inputs: [input('A', ['2'], { contents: { fp32_contents: [1, 2] } })] });
    expect(() => decodeInferRequest(msg)).toThrow(expect.objectContaining({ code: 'INVALID_ARG' }));
  });

  it('rejects unknown datatypes, negative dims and bad versions', () => {
    expect(() => decodeInferRequest(request({ inputs: [input('A', ['1'], { datatype: 'INT3' })] }))).toThrow(
      invalid('invalid datatype for input A'),
    );
    expect(() => decodeInferRequest(request({ inputs: [input('A', ['-1', '16'])] }))).toThrow(
      invalid("[request id: r1] All input dimensions should be specified for input 'A' for model 'simple', got [-1,16]"),
    );
    expect(() => decodeInferRequest(request({ model_version: 'x' }))).toThrow(
      expect.objectContaining({ code: 'INVALID_ARG' }),
    );
  });

  it('maps outputs, classification and request parameters', () => {
    const { request: r, enableEmptyFinalResponse } = decodeInferRequest(
      request({
        parameters: {
          sequence_id: { int64_param: '12', parameter_choice: 'int64_param' },
          sequence_start: { bool_param: true, parameter_choice: 'bool_param' },
          custom: { string_param: 'v', parameter_choice: 'string_param' },
        },
        outputs: [
          { name: 'OUTPUT0', parameters: { classification: { int64_param: '3', parameter_choice: 'int64_param' } } },
          { name: 'OUTPUT1', parameters: { binary_data: { bool_param: true, parameter_choice: 'bool_param' } } },
        ],
      }),
    );
    expect(r.outputs).toEqual([{ name: 'OUTPUT0', classification: 3 }, { name: 'OUTPUT1' }]);
    expect(r).toMatchObject({ sequenceId: 12n, sequenceStart: true, sequenceEnd: false, parameters: { custom: 'v' } });
    expect(enableEmptyFinalResponse).toBe(false);
  });

  it('applies the shared parameter rules (triton_ keys, negative priority)', () => {
    const withParams = (parameters: WireModelInferRequest['parameters']) => () =>
      decodeInferRequest(request({ parameters }));
    expect(withParams({ triton_x: { bool_param: true, parameter_choice: 'bool_param' } })).toThrow(
      invalid(
        "parameter keys starting with 'triton_' are reserved for Triton usage. Only the following keys starting with 'triton_' are allowed: triton_enable_empty_final_response",
      ),
    );
    expect(withParams({ triton_enable_empty_final_response: { bool_param: true, parameter_choice: 'bool_param' } })).not.toThrow();
    expect(withParams({ priority: { int64_param: '-1', parameter_choice: 'int64_param' } })).toThrow(
      invalid("invalid value for 'priority', expected value >= 0."),
    );
  });

  it('rejects a classification that is not a positive int64_param', () => {
    const bad = (p: WireModelInferRequest['outputs'][0]['parameters']) =>
      decodeInferRequest(request({ outputs: [{ name: 'O', parameters: p }] }));
    expect(() => bad({ classification: { string_param: '3', parameter_choice: 'string_param' } })).toThrow(
      invalid("invalid value type for 'classification' parameter, expected int64_param"),
    );
    expect(() => bad({ classification: { int64_param: '0', parameter_choice: 'int64_param' } })).toThrow(
      invalid("invalid value for 'classification' parameter, expected >= 0"),
    );
  });
});

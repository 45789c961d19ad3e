import { decodeInferRequest, type RawInputInfo } from './infer-codec';

/** Triton's HTTP front door words (server src/http_server.cc) for requests it cannot read. */

const in0 = { name: 'INPUT0', shape: [1, 2], datatype: 'INT32', data: [1, 2] };

function messageOf(run: () => unknown): string {
  try {
    run();
  } catch (e) {
    expect((e as { code: string }).code).toBe('INVALID_ARG');
    return (e as Error).message;
  }
  throw new Error('expected an error');
}

const json = (body: unknown, header?: string) => () =>
  decodeInferRequest(Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)), header, 'm', -1);

const raw = (inputs: RawInputInfo[], body = Buffer.alloc(8)) => () => decodeInferRequest(body, '0', 'm', -1, () => inputs);

describe('HTTP infer decoding errors, in Triton words', () => {
  it.each([
    ['abc', 'Unable to parse Inference-Header-Content-Length, got: abc'],
    ['99999999999', 'Unable to parse Inference-Header-Content-Length, value is out of range [ -2147483648, 2147483647 ], got: 99999999999'],
    ['-1', 'inference header size should be in range (0, 76), got: -1'],
    ['77', 'inference header size should be in range (0, 76), got: 77'],
  ])('Inference-Header-Content-Length %s', (header, message) => {
    const body = JSON.stringify({ inputs: [in0] });
    expect(body.length).toBe(76);
    expect(messageOf(json(body, header))).toBe(message);
  });

  it('a raw request to a model without exactly one input', () => {
    const two = [
      { name: 'A', datatype: 'INT32', shape: [2] },
      { name: 'B', datatype: 'INT32', shape: [2] },
    ];
    expect(messageOf(raw(two))).toBe(
      "[request id: <id_unknown>] Raw request must only have 1 input (found 1) to be deduced but got 2 inputs in 'm' model configuration",
    );
  });

  it('a raw request whose shape cannot be deduced', () => {
    expect(messageOf(raw([{ name: 'A', datatype: 'INT32', shape: [2, -1, -1] }]))).toBe(
      "[request id: <id_unknown>] The shape of the raw input 'A' can not be deduced because there are more than one variable-sized dimension",
    );
    expect(messageOf(raw([{ name: 'S', datatype: 'BYTES', shape: [2] }]))).toBe(
      "[request id: <id_unknown>] For BYTE datatype raw input 'S', the model must have input shape [1]",
    );
  });

  it.each([
    [{ ...in0, data: undefined }, "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But no field is set"],
    [
      { ...in0, parameters: { binary_data_size: 8, shared_memory_region: 'r' } },
      "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But set 'data' 'binary_data_size' 'shared_memory_region'",
    ],
    [{ ...in0, data: undefined, parameters: { binary_data_size: 8 } }, "must specify valid 'Infer-Header-Content-Length' in request header and 'binary_data_size' when passing inputs in binary data format"],
    [{ ...in0, data: undefined, parameters: { binary_data_size: -8 } }, "Unable to parse 'binary_data_size': attempt to access JSON non-unsigned-integer as unsigned-integer"],
  ])('input data sources: %j', (input, message) => {
    expect(messageOf(json({ inputs: [input] }))).toBe(message);
  });

  it('binary sections shorter or longer than declared', () => {
    const header = JSON.stringify({ inputs: [{ ...in0, data: undefined, parameters: { binary_data_size: 8 } }] });
    const short = Buffer.concat([Buffer.from(header), Buffer.alloc(3)]);
    expect(messageOf(() => decodeInferRequest(short, String(header.length), 'm', -1))).toBe(
      "unexpected size for input 'INPUT0', expecting 5 additional bytes for model 'm'",
    );
    const long = Buffer.concat([Buffer.from(header), Buffer.alloc(9)]);
    expect(messageOf(() => decodeInferRequest(long, String(header.length), 'm', -1))).toBe("unexpected additional input data for model 'm'");
  });

  it('parameters and output parameters of the wrong type', () => {
    expect(messageOf(json({ inputs: [in0], parameters: { p: [1] } }))).toBe(
      "parameter 'p' has invalid type. It should be either 'int', 'bool', or 'string'.",
    );
    expect(messageOf(json({ inputs: [in0], parameters: { sequence_start: 1 } }))).toBe(
      "Unable to parse 'sequence_start': attempt to access JSON non-boolean as boolean",
    );
    expect(messageOf(json({ inputs: [in0], parameters: { priority: -1 } }))).toBe(
      "Unable to parse 'priority': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
    expect(messageOf(json({ inputs: [in0], parameters: { triton_x: 1 } }))).toBe(
      "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.",
    );
    expect(messageOf(json({ inputs: [in0], outputs: [{ name: 'O', parameters: { classification: 'x' } }] }))).toBe(
      "Unable to parse 'classification': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
    expect(messageOf(json({ inputs: [in0], outputs: [{ name: 'O', parameters: { binary_data: 1 } }] }))).toBe(
      "Unable to parse 'binary_data': attempt to access JSON non-boolean as boolean",
    );
  });

  it('JSON that does not parse, and data nested too deep', () => {
    expect(messageOf(json('{"inputs": ['))).toMatch(/^failed to parse the request JSON buffer: /);
    let deep: unknown = [1, 2];
    for (let i = 0; i < 120; i++) deep = [deep];
    expect(messageOf(json({ inputs: [{ ...in0, data: deep }] }))).toBe(
      "Unable to parse 'data': JSON nesting depth exceeds maximum allowed limit (100)",
    );
  });
});

import fc from 'fast-check';
import { InferenceError } from '@nereid/protocol';
import { bytesView, encodeJsonDataText, isBytesData, tensorDataFromBytes, type Tensor, type TensorData } from '@nereid/tensor';
import { fuzz, fuzzParams, hostileShapeArb, onlyThrows, rawTensorArb } from '../../../../test/helpers/fuzz';
import { decodeInferRequest } from './infer-codec';

const JSON_TYPES = ['BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64', 'FP32', 'FP64', 'BYTES'] as const;
const utf8Element = fc.string({ maxLength: 8, unit: 'binary' }).map((s) => new Uint8Array(Buffer.from(s, 'utf8')));

function wire(data: TensorData): Buffer {
  if (!isBytesData(data)) return Buffer.from(bytesView(data));
  return Buffer.concat(data.map((e) => Buffer.concat([Buffer.from(Uint32Array.of(e.byteLength).buffer), e])));
}

const decode = (body: Buffer, headerLength?: string) => decodeInferRequest(body, headerLength, 'm', -1);

/** Whatever a request decodes to claims no more elements than the body has bytes (JSON: one or more per element). */
function expectBounded(body: Buffer, inputs: readonly Tensor[]): void {
  for (const t of inputs) {
    const count = t.shape.reduce((a, d) => a * d, 1);
    expect(t.data.length).toBe(count);
    expect(count).toBeLessThanOrEqual(body.length);
  }
}

/** A plausible infer body with hostile pieces: wrong types, huge shapes, odd parameters, stray data. */
const hostileInferArb = fc.record(
  {
    id: fc.oneof(fc.string(), fc.integer()),
    parameters: fc.dictionary(fc.constantFrom('sequence_id', 'priority', 'timeout', 'binary_data_output', 'x'), fc.jsonValue()),
    inputs: fc.array(
      fc.record(
        {
          name: fc.oneof(fc.constant('x'), fc.string()),
          datatype: fc.oneof(fc.constantFrom('FP32', 'INT64', 'BYTES', 'BOOL', 'FP16', 'UINT8'), fc.string()),
          shape: fc.oneof(hostileShapeArb, fc.jsonValue()),
          data: fc.oneof(fc.array(fc.oneof(fc.double(), fc.integer(), fc.string(), fc.boolean())), fc.jsonValue()),
          parameters: fc.dictionary(
            fc.constantFrom('binary_data_size', 'shared_memory_region', 'x'),
            fc.oneof(fc.nat(64), fc.integer(), fc.jsonValue()),
          ),
        },
        { requiredKeys: ['name'] },
      ),
      { maxLength: 3 },
    ),
    outputs: fc.array(fc.record({ name: fc.string(), parameters: fc.dictionary(fc.constantFrom('classification', 'binary_data'), fc.jsonValue()) })),
  },
  { requiredKeys: [] },
);

describe('HTTP infer decoder (fuzz)', () => {
  it('round-trips JSON data of every JSON datatype: encode as the server writes it, decode as a request', () => {
    fuzz(
      fc.property(rawTensorArb(JSON_TYPES, utf8Element), ({ datatype, shape, raw }) => {
        const data = tensorDataFromBytes(datatype, shape, raw, 'x', 'm');
        const text = encodeJsonDataText({ name: 'x', datatype, shape, data });
        const body = Buffer.from(`{"inputs":[{"name":"x","datatype":"${datatype}","shape":${JSON.stringify(shape)},"data":${text}}]}`);
        const { request } = decode(body);
        // Elementwise (NaN equals NaN, -0 is not 0): JSON's NaN carries no sign or payload bits.
        const got = request.inputs[0].data;
        if (isBytesData(data)) expect(wire(got)).toEqual(wire(data));
        else expect(got).toEqual(data);
        expect(request.inputs[0].shape).toEqual(shape);
      }),
      fuzzParams(),
    );
  });

  it('round-trips binary data of every datatype through the binary tensor extension', () => {
    fuzz(
      fc.property(rawTensorArb(), ({ datatype, shape, raw }) => {
        const json = Buffer.from(
          JSON.stringify({ inputs: [{ name: 'x', datatype, shape, parameters: { binary_data_size: raw.byteLength } }] }),
        );
        const { request } = decode(Buffer.concat([json, raw]), String(json.length));
        expect(wire(request.inputs[0].data)).toEqual(Buffer.from(raw));
      }),
      fuzzParams(),
    );
  });

  it('refuses arbitrary bytes and header lengths only with InferenceError', () => {
    fuzz(
      fc.property(
        fc.uint8Array({ maxLength: 200 }),
        fc.option(fc.oneof(fc.nat(220).map(String), fc.string()), { nil: undefined }),
        (bytes, headerLength) => {
          const body = Buffer.from(bytes);
          const decoded = onlyThrows(InferenceError, () => decode(body, headerLength));
          if (decoded) expectBounded(body, decoded.request.inputs);
        },
      ),
      fuzzParams(),
    );
  });

  it('refuses hostile infer bodies (JSON and binary) only with InferenceError, within the bytes sent', () => {
    fuzz(
      fc.property(hostileInferArb, fc.uint8Array({ maxLength: 64 }), fc.boolean(), (json, tail, binary) => {
        const head = Buffer.from(JSON.stringify(json));
        const body = binary ? Buffer.concat([head, tail]) : head;
        const decoded = onlyThrows(InferenceError, () => decode(body, binary ? String(head.length) : undefined));
        if (decoded) expectBounded(body, decoded.request.inputs);
      }),
      fuzzParams(),
    );
  });

  it('refuses arbitrary JSON text only with InferenceError', () => {
    fuzz(
      fc.property(fc.json({ maxDepth: 6 }), (text) => {
        const body = Buffer.from(text);
        const decoded = onlyThrows(InferenceError, () => decode(body));
        if (decoded) expectBounded(body, decoded.request.inputs);
      }),
      fuzzParams(),
    );
  });
});

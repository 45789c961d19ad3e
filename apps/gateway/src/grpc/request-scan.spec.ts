import { InferenceError } from '@nereid/protocol';
import { decodeInferRequest } from './infer-request';
import { loadServices } from './proto-loader';
import { BYTES_ENTRY_COST, LONG_COST, MESSAGE_COST, NUMBER_COST, ScanLimitError, scanInferRequest, STRING_COST, WireScanError } from './request-scan';
import { refusalOf, scannedDeserializer } from './scanned-deserializers';
import type { WireModelInferRequest } from './wire-types';

const modelInfer = loadServices().inference.ModelInfer;
const serialize = (msg: unknown) => modelInfer.requestSerialize(msg);
const deserialize = modelInfer.requestDeserialize as (bytes: Buffer) => WireModelInferRequest;

/** The `simple` model's request as Triton's example clients send it (two INT32 [1,16] inputs as raw contents). */
const simple = serialize({
  model_name: 'simple',
  id: 'req-1',
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
  ],
  outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT1' }],
  raw_input_contents: [Buffer.alloc(64, 1), Buffer.alloc(64, 2)],
});

const MiB = 1024 * 1024;

describe('scanInferRequest', () => {
  it('counts the entries, elements and strings of a request', () => {
    const counts = scanInferRequest(simple);
    expect(counts).toMatchObject({ messages: 4, bytesEntries: 2, numbers: 0, longs: 4, strings: 8 });
    const strings = 'simple'.length + 'req-1'.length + 2 * ('INPUT0'.length + 'INT32'.length) + 2 * 'OUTPUT0'.length;
    expect(counts.cost).toBe(4 * MESSAGE_COST + 2 * BYTES_ENTRY_COST + 4 * LONG_COST + 8 * STRING_COST + strings);
    expect(simple.toString('utf8', ...counts.modelName!)).toBe('simple');
    expect(simple.toString('utf8', ...counts.id!)).toBe('req-1');
  });

  it('counts packed and unpacked numbers, and bytes entries, per element', () => {
    const n = 1000;
    const bytes = serialize({
      inputs: [{ name: 'x', contents: { int_contents: new Array(n).fill(0), fp64_contents: new Array(n).fill(1.5), int64_contents: new Array(n).fill(7), bytes_contents: new Array(n).fill(Buffer.alloc(0)) } }],
    });
    const counts = scanInferRequest(bytes);
    expect(counts).toMatchObject({ messages: 2, numbers: 2 * n, longs: n, bytesEntries: n });
    const contents = Buffer.concat(Array.from({ length: 5 }, () => Buffer.from([0x10, 0x01]))); // int_contents = 1, five times
    const input = Buffer.concat([Buffer.from([0x2a, contents.length]), contents]); // InferInputTensor.contents
    const request = Buffer.concat([Buffer.from([0x2a, input.length]), input]); // ModelInferRequest.inputs
    expect(scanInferRequest(request)).toMatchObject({ messages: 2, numbers: 5 });
    expect(deserialize(request).inputs[0].contents!.int_contents).toHaveLength(5);
  });

  it('stops as soon as the cost passes the limit: 1 M empty bytes_contents (a 2 MB message) are refused at 64 MiB', () => {
    const bytes = serialize({ model_name: 'm', id: 'x', inputs: [{ name: 'IN', datatype: 'BYTES', shape: [1_000_000], contents: { bytes_contents: new Array(1_000_000).fill(Buffer.alloc(0)) } }] });
    expect(bytes.length).toBeLessThan(2.1e6);
    let error: unknown;
    try {
      scanInferRequest(bytes, 64 * MiB - bytes.length);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ScanLimitError);
    const { counts } = error as ScanLimitError;
    expect(counts.bytesEntries).toBeLessThan(64 * MiB / BYTES_ENTRY_COST + 1);
    expect(counts.cost).toBeGreaterThan(64 * MiB - bytes.length);
  });

  it("counts the BYTES elements a BYTES input's shape claims, at most one per 4 bytes of the message", () => {
    const n = 10_000;
    const raw = Buffer.alloc(5 * n);
    for (let i = 0; i < n; i++) raw.writeUInt32LE(1, 5 * i);
    const bytes = serialize({ inputs: [{ name: 'x', datatype: 'BYTES', shape: [1, n] }, { name: 'y', datatype: 'INT32', shape: [1, n] }], raw_input_contents: [raw, Buffer.alloc(4 * n)] });
    expect(scanInferRequest(bytes).bytesElements).toBe(n);
    // A shape claiming more than the message can hold counts what it can hold; 0 and negative dims nothing.
    const claim = (shape: string[]) => scanInferRequest(serialize({ inputs: [{ name: 'x', datatype: 'BYTES', shape }], raw_input_contents: [raw] }));
    const big = claim(['1099511627776', '1099511627776']);
    expect(big.bytesElements).toBeLessThanOrEqual((5 * n + 64) / 4 + 1);
    expect(big.bytesElements).toBeGreaterThan((5 * n) / 4);
    expect(claim(['0', '5']).bytesElements).toBe(0);
    expect(claim(['-1', '5']).bytesElements).toBe(0);
    expect(claim(['3', '7']).bytesElements).toBe(21);
  });

  it('refuses 2.5 M one-byte BYTES elements in raw_input_contents (12.5 MB) at 64 MiB', () => {
    const n = 2_500_000;
    const raw = Buffer.alloc(5 * n);
    for (let i = 0; i < n; i++) raw.writeUInt32LE(1, 5 * i);
    const bytes = serialize({ inputs: [{ name: 'x', datatype: 'BYTES', shape: [1, n] }], raw_input_contents: [raw] });
    expect(() => scanInferRequest(bytes, 64 * MiB - bytes.length)).toThrow(ScanLimitError);
  });

  it('refuses bytes protobufjs would not decode with its own error', () => {
    expect(() => scanInferRequest(Buffer.from([0x2a, 0x05, 0x0a]))).toThrow(WireScanError); // inputs entry longer than the message
    expect(() => scanInferRequest(Buffer.from([0x0f]))).toThrow(WireScanError); // wire type 7
    expect(() => deserialize(Buffer.from([0x2a, 0x05, 0x0a]))).toThrow();
  });

  it('costs a few microseconds on a normal request (simple)', () => {
    const runs = 20_000;
    for (let i = 0; i < 1000; i++) scanInferRequest(simple, 64 * MiB);
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < runs; i++) scanInferRequest(simple, 64 * MiB);
    const scanUs = Number(process.hrtime.bigint() - t0) / 1000 / runs;
    const t1 = process.hrtime.bigint();
    for (let i = 0; i < runs; i++) deserialize(simple);
    const decodeUs = Number(process.hrtime.bigint() - t1) / 1000 / runs;
    console.log(`scan of simple (${simple.length} bytes): ${scanUs.toFixed(2)} us; protobufjs decode: ${decodeUs.toFixed(2)} us`);
    // Loose, for a loaded machine: measured well under 1 us.
    expect(scanUs).toBeLessThan(20);
  });
});

describe('scannedDeserializer', () => {
  const bounded = scannedDeserializer(modelInfer.requestDeserialize, 64 * MiB);

  it('decodes a request within the limit as protobufjs does', () => {
    expect(bounded(simple)).toEqual(deserialize(simple));
    expect(refusalOf(bounded(simple))).toBeUndefined();
  });

  it('hands on a request too large decoded, undecoded, which decodeInferRequest refuses by name and id (INVALID_ARG)', () => {
    const n = 300_000; // 900 KB on the wire, ~77 MB counted
    const bytes = serialize({ model_name: 'm', id: 'big', inputs: [{ name: 'IN', datatype: 'BYTES', shape: [n], contents: { bytes_contents: new Array(n).fill(Buffer.from('a')) } }] });
    const message = bounded(bytes) as WireModelInferRequest;
    expect(message).toMatchObject({ model_name: 'm', id: 'big', inputs: [], raw_input_contents: [] });
    const error = refusalOf(message)!;
    expect(error).toBeInstanceOf(InferenceError);
    expect(error.code).toBe('INVALID_ARG');
    expect(error.message).toMatch(
      new RegExp(`^request message size of ${bytes.length} bytes takes at least \\d+ bytes decoded .* exceeds the maximum allowed decoded message size of ${64 * MiB} bytes\\. Use --grpc-max-message-size`),
    );
    expect(() => decodeInferRequest(message)).toThrow(error);
    // No limit (-1): decoded.
    expect(scannedDeserializer(modelInfer.requestDeserialize, -1)(bytes)).toMatchObject({ id: 'big' });
  });

  it('bounds what a message decodes to by 64 MiB at least: a low wire limit does not refuse an ordinary request', () => {
    expect(refusalOf(scannedDeserializer(modelInfer.requestDeserialize, 1024)(simple))).toBeUndefined();
    const typed = serialize({ model_name: 'simple', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], contents: { int_contents: new Array(16).fill(1) } }] });
    expect(scanInferRequest(typed).cost + typed.length).toBeGreaterThan(typed.length * 4);
    expect(refusalOf(scannedDeserializer(modelInfer.requestDeserialize, 1024)(typed))).toBeUndefined();
  });

  it('throws on bytes the scan cannot read (grpc-js: INTERNAL, as for protobufjs failing)', () => {
    expect(() => bounded(Buffer.from([0x0f]))).toThrow(WireScanError);
  });
});

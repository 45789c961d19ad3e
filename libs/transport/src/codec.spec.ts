import fc from 'fast-check';
import { InferenceError } from '@nereid/protocol';
import { DATATYPES, ELEMENT_SIZE, bytesView, isBytesData, tensorDataFromBytes, type Tensor } from '@nereid/tensor';
import { fuzz, fuzzParams, onlyThrows, rawTensorArb } from '../../../test/helpers/fuzz';
import { decodeMessage, encodeMessage } from './codec';
import type { BatchDoneMessage, ExecuteBatchMessage, ResponseMessage, TransportMessage, WireRequest } from './messages';

function rawOf(t: Tensor): Buffer {
  if (isBytesData(t.data)) {
    return Buffer.concat(t.data.flatMap((e) => {
      const n = Buffer.alloc(4);
      n.writeUInt32LE(e.byteLength);
      return [n, Buffer.from(e)];
    }));
  }
  return Buffer.from(bytesView(t.data));
}

function request(inputs: Tensor[], extra: Partial<WireRequest> = {}): WireRequest {
  return {
    requestId: 'gw1:1', replyTo: 'gw1', clientId: 'client-7', modelName: 'simple', modelVersion: -1, inputs,
    parameters: { a: 'x', b: 3, c: true, big: 12345678901234567890n },
    correlationId: 18446744073709551615n, flags: { sequenceStart: true, sequenceEnd: false },
    priority: 2, timeoutUs: 5000, ...extra,
  };
}

function batch(requests: WireRequest[]): ExecuteBatchMessage {
  return { kind: 'execute-batch', batchId: 'b1', key: 'simple/1/0', instance: 1, slot: 3, requests, fence: 7 };
}

function expectSameTensors(a: Tensor[], b: Tensor[]): void {
  expect(b.map((t) => [t.name, t.datatype, t.shape])).toEqual(a.map((t) => [t.name, t.datatype, t.shape]));
  a.forEach((t, i) => expect(rawOf(b[i]).equals(rawOf(t))).toBe(true));
}

describe('transport codec', () => {
  it('round-trips an execute-batch with a tensor of every datatype, bigints and requested outputs', () => {
    const inputs: Tensor[] = DATATYPES.map((datatype, i) => {
      const raw = datatype === 'BYTES'
        ? Buffer.from([2, 0, 0, 0, 104, 105, 0, 0, 0, 0])
        : Buffer.from(Array.from({ length: 16 }, (_, j) => (datatype === 'BOOL' ? j % 2 : (j * 37 + i) & 255)));
      const fixedShape = datatype === 'BYTES' ? [2] : [1, 16 / ELEMENT_SIZE[datatype]];
      return { name: `in_${datatype}`, datatype, shape: fixedShape, data: tensorDataFromBytes(datatype, fixedShape, raw, 'x', 'm') };
    });
    const msg = batch([request(inputs, { outputs: [{ name: 'OUT', classification: 2, parameters: { binary_data: true, n: 5n } }] })]);
    const back = decodeMessage(encodeMessage(msg)) as ExecuteBatchMessage;
    expect({ ...back, requests: [] }).toEqual({ ...msg, requests: [] });
    const r = back.requests[0];
    expect({ ...r, inputs: [] }).toEqual({ ...msg.requests[0], inputs: [] });
    expect(typeof r.correlationId).toBe('bigint');
    expect(r.parameters.big).toBe(12345678901234567890n);
    expect(r.outputs![0].parameters!.n).toBe(5n);
    expectSameTensors(inputs, r.inputs);
  });

  it("round-trips an execute-batch's further batches ('more'), each with its own tensors; refuses a 'more' that is not a list of flat batches", () => {
    const t = (name: string, v: number): Tensor => ({ name, datatype: 'INT32', shape: [1, 2], data: Int32Array.from([v, v + 1]) });
    const msg: ExecuteBatchMessage = {
      ...batch([request([t('a', 1)])]),
      more: [{ ...batch([request([t('b', 3)]), request([t('c', 5)], { requestId: 'gw1:2' })]), batchId: 'b2', instance: 0 }],
    };
    const back = decodeMessage(encodeMessage(msg)) as ExecuteBatchMessage;
    expect(back.more).toHaveLength(1);
    expect({ ...back.more![0], requests: [] }).toEqual({ ...msg.more![0], requests: [] });
    expect(back.more![0].requests.map((r) => r.requestId)).toEqual(['gw1:1', 'gw1:2']);
    expectSameTensors(msg.requests[0].inputs, back.requests[0].inputs);
    expectSameTensors([t('b', 3)], back.more![0].requests[0].inputs);
    expectSameTensors([t('c', 5)], back.more![0].requests[1].inputs);
    expect(back.more![0].requests[0].correlationId).toBe(18446744073709551615n);
    expect('more' in (decodeMessage(encodeMessage(batch([request([t('a', 1)])]))) as ExecuteBatchMessage)).toBe(false);
    // A header without frames, written by hand (the encoder writes only good ones).
    const refused = (more: unknown): string => {
      const header = Buffer.from(JSON.stringify({ ...batch([]), more }));
      const prefix = Buffer.alloc(12);
      prefix.write('NRM1', 0, 'latin1');
      prefix.writeUInt32LE(header.length, 4);
      try {
        decodeMessage(Buffer.concat([prefix, header]));
      } catch (e) {
        return (e as InferenceError).message;
      }
      throw new Error('decoded');
    };
    expect(refused({ a: 1 })).toMatch(/'more' is not a list/);
    expect(refused([batch([]), 3])).toMatch(/'more' holds something else than batches/);
    expect(refused([{ ...batch([]), more: [batch([])] }])).toMatch(/'more' holds something else than batches/);
  });

  it("round-trips a request's logId (absent stays absent); refuses one that is not a short string", () => {
    const t: Tensor = { name: 'a', datatype: 'INT32', shape: [1], data: Int32Array.from([1]) };
    const carried = decodeMessage(encodeMessage(batch([request([t], { clientId: '', logId: 'nereid-12' })]))) as ExecuteBatchMessage;
    expect(carried.requests[0].logId).toBe('nereid-12');
    const none = decodeMessage(encodeMessage(batch([request([t], { logId: undefined })]))) as ExecuteBatchMessage;
    expect('logId' in none.requests[0]).toBe(false);
    const refused = (logId: unknown): string => {
      try {
        decodeMessage(encodeMessage(batch([request([t], { logId: logId as string })])));
      } catch (e) {
        expect(e).toBeInstanceOf(InferenceError);
        return (e as InferenceError).message;
      }
      throw new Error('decoded');
    };
    expect(refused(7)).toMatch(/logId is not a string of at most 256 characters/);
    expect(refused({ id: 'x' })).toMatch(/logId is not a string/);
    expect(refused('x'.repeat(257))).toMatch(/logId is not a string of at most 256 characters/);
    expect((decodeMessage(encodeMessage(batch([request([t], { logId: 'x'.repeat(256) })]))) as ExecuteBatchMessage).requests[0].logId).toHaveLength(256);
  });

  it("round-trips a batch-done's further reports ('more'); refuses a 'more' that is not a list of reports with ids", () => {
    const compute = { inputNs: 1, inferNs: 2, outputNs: 3 };
    const done: BatchDoneMessage = {
      kind: 'batch-done', batchId: 'b1', key: 'simple/1', workerId: 'w1', batchSize: 1, requestCount: 1, compute,
      more: [{ batchId: 'b2', batchSize: 2, requestCount: 2, compute }],
    };
    expect(decodeMessage(encodeMessage(done))).toEqual(done);
    const refused = (more: unknown): string => {
      try {
        decodeMessage(encodeMessage({ ...done, more } as BatchDoneMessage));
      } catch (e) {
        return (e as InferenceError).message;
      }
      throw new Error('decoded');
    };
    expect(refused({ batchId: 'b2' })).toMatch(/'more' is not a list of batch reports/);
    expect(refused([{ batchSize: 1 }])).toMatch(/'more' is not a list of batch reports/);
    expect(refused([null])).toMatch(/'more' is not a list of batch reports/);
  });

  it('round-trips responses: tensors, errors, flag-only finals and statistics; no numbers in the header', () => {
    const out: Tensor = { name: 'OUTPUT0', datatype: 'FP32', shape: [1, 4], data: new Float32Array([1.5, -2, 3, 1e30]) };
    const ok: ResponseMessage = {
      kind: 'response', requestId: 'gw1:9', final: true,
      response: { id: 'c', modelName: 'simple', modelVersion: '1', outputs: [out], parameters: { sequence_id: 3n } },
      stats: { execStart: 12.5, inputNs: 1, inferNs: 2, outputNs: 3 },
    };
    const encoded = encodeMessage(ok);
    expect(encoded.toString('latin1')).not.toContain('1.5');
    const back = decodeMessage(encoded) as ResponseMessage;
    expect(back.response!.parameters).toEqual({ sequence_id: 3n });
    expect(Array.from(back.response!.outputs[0].data as Float32Array)).toEqual([1.5, -2, 3, Math.fround(1e30)]);
    expect(back.stats).toEqual(ok.stats);
    const failed: ResponseMessage = { kind: 'response', requestId: 'gw1:9', final: true, error: { code: 'UNAVAILABLE', message: 'gone' } };
    expect(decodeMessage(encodeMessage(failed))).toEqual(failed);
    const flagOnly: ResponseMessage = { kind: 'response', requestId: 'gw1:9', final: true };
    expect(decodeMessage(encodeMessage(flagOnly))).toEqual(flagOnly);
  });

  it('round-trips the tensor-free messages as they are', () => {
    const msgs: TransportMessage[] = [
      { kind: 'cancel', requestId: 'gw2:4' },
      { kind: 'batch-done', batchId: 'b', key: 'k/1/0', workerId: 'w1', batchSize: 4, requestCount: 2, compute: { inputNs: 1, inferNs: 2, outputNs: 3 } },
      {
        kind: 'batch-done', batchId: 'b1', key: 'k/1', workerId: 'w1', batchSize: 1, requestCount: 1, compute: { inputNs: 0, inferNs: 0, outputNs: 0 },
        more: [{ batchId: 'b2', batchSize: 2, requestCount: 2, compute: { inputNs: 1, inferNs: 2, outputNs: 3 } }],
      },
      { kind: 'heartbeat', workerId: 'w1', at: 1700000000000, models: [{ key: 'k/1/0', instances: 2 }], devices: { gpus: 0 }, load: 3 },
      { kind: 'lifecycle', model: 'simple', version: 1, state: 'UNAVAILABLE', reason: 'unloaded', key: 'simple/1/0' },
      { kind: 'heartbeat', workerId: 'gw1', role: 'gateway', at: 1700000000000, models: [], devices: { gpus: 0 }, load: 0 },
      { kind: 'control', id: 'gw1:c1', replyTo: 'gateway:gw1', from: 'gw1', op: 'load', model: 'm', config: '{}', files: [['file:1/model.onnx', 'AAE=']] },
      { kind: 'control-reply', id: 'gw1:c1', member: 'w1', role: 'worker', error: { code: 'INVALID_ARG', message: "failed to load 'm'" } },
      { kind: 'control-reply', id: 'gw1:c2', member: 'w1', role: 'worker', stats: [{ name: 'm', version: '1', inference_count: 3 }], index: [{ name: 'm', version: '1', state: 'READY' }] },
    ];
    for (const m of msgs) expect(decodeMessage(encodeMessage(m))).toEqual(m);
  });

  it('round-trips empty tensors and empty BYTES elements', () => {
    const inputs: Tensor[] = [
      { name: 'e', datatype: 'FP32', shape: [0, 3], data: new Float32Array(0) },
      { name: 's', datatype: 'BYTES', shape: [0], data: [] },
      { name: 'z', datatype: 'BYTES', shape: [3], data: [new Uint8Array(0), new Uint8Array(0), new Uint8Array([0])] },
    ];
    const back = decodeMessage(encodeMessage(batch([request(inputs)]))) as ExecuteBatchMessage;
    expectSameTensors(inputs, back.requests[0].inputs);
  });

  it('round-trips a 64 MiB tensor, viewed in place when the buffer is aligned', () => {
    const data = new Float32Array(16 * 1024 * 1024);
    for (let i = 0; i < data.length; i += 4099) data[i] = i;
    const t: Tensor = { name: 'big', datatype: 'FP32', shape: [1, data.length], data };
    const encoded = encodeMessage(batch([request([t])]));
    expect(encoded.length).toBeLessThan(data.byteLength + 4096);
    const back = decodeMessage(encoded) as ExecuteBatchMessage;
    const got = back.requests[0].inputs[0].data as Float32Array;
    expect(got.length).toBe(data.length);
    expect(got[4099 * 1000]).toBe(4099 * 1000);
    expect(Buffer.from(bytesView(got)).equals(Buffer.from(bytesView(data)))).toBe(true);
    if (encoded.byteOffset % 8 === 0) expect(got.buffer).toBe(encoded.buffer);
  });

  it('decodes a small message handed over at an odd offset (as Redis replies are) into views of one aligned copy', () => {
    const out = (name: string): Tensor => ({ name, datatype: 'INT32', shape: [1, 4], data: new Int32Array([1, -2, 3, 1 << 30]) });
    const encoded = encodeMessage({
      kind: 'response', requestId: 'gw1:3', final: true,
      response: { id: '', modelName: 'simple', modelVersion: '1', outputs: [out('OUTPUT0'), out('OUTPUT1')] },
    });
    const socketRead = Buffer.alloc(encoded.length + 64);
    encoded.copy(socketRead, 13);
    const back = decodeMessage(socketRead.subarray(13, 13 + encoded.length)) as ResponseMessage;
    const [a, b] = back.response!.outputs.map((t) => t.data as Int32Array);
    expect([Array.from(a), Array.from(b)]).toEqual([[1, -2, 3, 1 << 30], [1, -2, 3, 1 << 30]]);
    expect(a.buffer).toBe(b.buffer);
    expect(a.buffer).not.toBe(socketRead.buffer);
  });

  it("keeps parameters named like Object.prototype's members, bigint or not", () => {
    const params = (big: boolean): WireRequest['parameters'] => {
      const p: WireRequest['parameters'] = {};
      Object.defineProperty(p, '__proto__', { value: big ? 5n : 'x', enumerable: true, writable: true, configurable: true });
      Object.defineProperty(p, 'constructor', { value: 'c', enumerable: true, writable: true, configurable: true });
      return p;
    };
    for (const big of [false, true]) {
      const back = decodeMessage(encodeMessage(batch([request([], { parameters: params(big) })]))) as ExecuteBatchMessage;
      const p = back.requests[0].parameters;
      expect(Object.keys(p)).toEqual(['__proto__', 'constructor']);
      expect(Object.getOwnPropertyDescriptor(p, '__proto__')?.value).toBe(big ? 5n : 'x');
      expect(Object.getOwnPropertyDescriptor(p, 'constructor')?.value).toBe('c');
    }
  });

  it('round-trips any tensor of any datatype (property)', () => {
    fuzz(
      fc.property(fc.array(rawTensorArb(), { maxLength: 4 }), fc.boolean(), (raws, misalign) => {
        const inputs = raws.map((r, i): Tensor => ({
          name: `t${i}`, datatype: r.datatype, shape: r.shape, data: tensorDataFromBytes(r.datatype, r.shape, r.raw, 'x', 'm'),
        }));
        let encoded: Uint8Array = encodeMessage(batch([request(inputs)]));
        if (misalign) {
          const shifted = new Uint8Array(encoded.byteLength + 1);
          shifted.set(encoded, 1);
          encoded = shifted.subarray(1);
        }
        const back = decodeMessage(encoded) as ExecuteBatchMessage;
        expectSameTensors(inputs, back.requests[0].inputs);
      }),
      fuzzParams(150),
    );
  });

  it('rejects corrupt messages with an INTERNAL InferenceError and never a huge allocation (fuzz)', () => {
    const t: Tensor = { name: 'x', datatype: 'BYTES', shape: [2], data: [Buffer.from('ab'), Buffer.from('cde')] };
    const good = encodeMessage(batch([request([t, { name: 'y', datatype: 'INT64', shape: [2], data: new BigInt64Array([1n, -1n]) }])]));
    const before = process.memoryUsage().arrayBuffers;
    fuzz(
      fc.property(
        fc.array(fc.tuple(fc.nat({ max: good.length - 1 }), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }),
        fc.nat({ max: good.length }),
        (edits, cut) => {
          const bad = Buffer.from(good.subarray(0, Math.max(cut, 1)));
          for (const [at, v] of edits) if (at < bad.length) bad[at] = v;
          const out = onlyThrows(InferenceError, () => decodeMessage(bad));
          if (out === undefined) return;
          expect(typeof out.kind).toBe('string');
        },
      ),
      fuzzParams(400),
    );
    fuzz(
      fc.property(fc.uint8Array({ maxLength: 256 }), (bytes) => {
        onlyThrows(InferenceError, () => decodeMessage(bytes));
      }),
      fuzzParams(400),
    );
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 * 1024 * 1024);
  });

  it('names what is wrong: bad lengths, shapes and frames', () => {
    const t: Tensor = { name: 'x', datatype: 'FP32', shape: [2], data: new Float32Array([1, 2]) };
    const good = encodeMessage(batch([request([t])]));
    const err = (b: Uint8Array): InferenceError => {
      try {
        decodeMessage(b);
      } catch (e) {
        return e as InferenceError;
      }
      throw new Error('decoded');
    };
    expect(err(good.subarray(0, 5)).message).toMatch(/shorter than the 12-byte prefix/);
    const hugeFrame = Buffer.from(good);
    hugeFrame.writeUInt32LE(0xffffffff, 12);
    hugeFrame.writeUInt32LE(0xffff, 16);
    expect(err(hugeFrame).message).toMatch(/frame 0 of \d+ bytes runs past the end/);
    expect(err(hugeFrame).code).toBe('INTERNAL');
    const manyFrames = Buffer.from(good);
    manyFrames.writeUInt32LE(0xffffffff, 8);
    expect(err(manyFrames).message).toMatch(/frames do not fit/);
    const wrongShape = encodeMessage(batch([request([{ ...t, shape: [2 ** 40] }])]));
    expect(err(wrongShape).message).toMatch(/tensor 'x' has 8 bytes, its shape needs/);
    const bytesLie = encodeMessage(batch([request([{ name: 's', datatype: 'BYTES', shape: [2 ** 50], data: [Buffer.from('a')] }])]));
    expect(err(bytesLie).message).toMatch(/does not hold the \d+ elements of its shape/);
  });
});

import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { InferenceError } from '@nereid/protocol';
import { BYTES_ELEMENT_COST } from '@nereid/tensor';
import { errorOf } from '../../../../test/helpers/inference-error';
import { BodyBudget } from './body-budget';
import { DecodedAllowance } from './decoded-allowance';
import { HeaderCache } from './header-cache';
import { decodeInferRequest } from './infer-codec';

const MiB = 1024 * 1024;

/** A binary request of `n` BYTES elements of `size` bytes each. */
function binaryBytes(n: number, size = 1): { body: Buffer; header: string } {
  const element = Buffer.concat([Buffer.from(Uint32Array.of(size).buffer), Buffer.alloc(size, 0x61)]);
  const data = Buffer.concat(new Array<Buffer>(n).fill(element));
  const json = Buffer.from(JSON.stringify({ inputs: [{ name: 'IN', datatype: 'BYTES', shape: [n], parameters: { binary_data_size: data.length } }] }));
  return { body: Buffer.concat([json, data]), header: String(json.length) };
}

function jsonBytes(elements: string[]): Buffer {
  return Buffer.from(JSON.stringify({ inputs: [{ name: 'IN', datatype: 'BYTES', shape: [elements.length], data: elements }] }));
}

describe('DecodedAllowance: BYTES elements count at their decoded size (issue 16)', () => {
  it('refuses a binary request whose elements decoded pass --http-max-input-size, before making them', () => {
    const n = 10_000;
    const { body, header } = binaryBytes(n);
    const limit = body.length + n * BYTES_ELEMENT_COST - 1;
    const e = errorOf(() => decodeInferRequest(body, header, 'm', -1, () => [], undefined, undefined, new DecodedAllowance(body.length, limit)));
    expect(e.code).toBe('INVALID_ARG');
    expect(e.message).toBe(
      `request size of ${body.length} bytes with ${n} BYTES elements (${BYTES_ELEMENT_COST} bytes each decoded) takes ${body.length + n * BYTES_ELEMENT_COST} bytes, which exceeds the maximum allowed input size of ${limit} bytes. Use --http-max-input-size to increase the limit.`,
    );
    const { request } = decodeInferRequest(body, header, 'm', -1, () => [], undefined, undefined, new DecodedAllowance(body.length, limit + 1));
    expect(request.inputs[0].data).toHaveLength(n);
  });

  it('refuses a JSON request the same way, and counts a shape that claims more elements than are sent', () => {
    const body = jsonBytes(new Array(1000).fill('a'));
    const limit = body.length + 1000 * BYTES_ELEMENT_COST - 1;
    expect(errorOf(() => decodeInferRequest(body, undefined, 'm', -1, () => [], undefined, undefined, new DecodedAllowance(body.length, limit))).message).toMatch(
      /^request size of \d+ bytes with 1000 BYTES elements \(128 bytes each decoded\)/,
    );
    // The shape is the count (the decoders make exactly that many or refuse): [2^40] is refused by its count.
    const claimed = Buffer.from(JSON.stringify({ inputs: [{ name: 'IN', datatype: 'BYTES', shape: [2 ** 40], data: ['a'] }] }));
    expect(errorOf(() => decodeInferRequest(claimed, undefined, 'm', -1, () => [], undefined, undefined, new DecodedAllowance(claimed.length, 64 * MiB))).message).toMatch(
      /^request size of \d+ bytes with 1099511627776 BYTES elements/,
    );
  });

  it('lets a batch of 10,000 sentences through at the defaults, charging 128 bytes per element', () => {
    const sentences = Array.from({ length: 10_000 }, (_, i) => `sentence number ${i} of the batch, about a hundred bytes long once it is padded out....`.padEnd(100, '.'));
    const body = jsonBytes(sentences);
    const charged: number[] = [];
    const allowance = new DecodedAllowance(body.length, 64 * MiB, (bytes) => void charged.push(bytes));
    const { request } = decodeInferRequest(body, undefined, 'm', -1, () => [], undefined, undefined, allowance);
    expect(request.inputs[0].data).toHaveLength(10_000);
    expect(charged).toEqual([10_000 * BYTES_ELEMENT_COST]);
    // 1.0 MB of JSON + 1.28 MB decoded overhead: far within 64 MiB.
    expect(body.length + 10_000 * BYTES_ELEMENT_COST).toBeLessThan(2.5e6);
  });

  it("refuses with the budget's error when the decoded bytes do not fit in it", () => {
    const body = jsonBytes(['a', 'b']);
    const full = InferenceError.unavailable('full');
    const e = errorOf(() => decodeInferRequest(body, undefined, 'm', -1, () => [], undefined, undefined, new DecodedAllowance(body.length, 64 * MiB, () => full)));
    expect(e).toBe(full);
  });

  it("charges a cached header's request too", () => {
    const cache = new HeaderCache();
    const { body, header } = binaryBytes(100);
    for (let i = 0; i < 3; i++) {
      const charged: number[] = [];
      const decoded = decodeInferRequest(body, header, 'm', -1, () => [], undefined, cache, new DecodedAllowance(body.length, 64 * MiB, (b) => void charged.push(b)));
      expect(decoded.request.inputs[0].data).toHaveLength(100);
      expect(charged).toEqual([100 * BYTES_ELEMENT_COST]);
    }
  });
});

describe('BodyBudget.growDecoded', () => {
  function admitted(budget: BodyBudget, bytes: number): ServerResponse {
    const req = { headers: { 'content-length': String(bytes) } } as unknown as IncomingMessage;
    const res = new EventEmitter() as unknown as ServerResponse;
    let went = false;
    budget.admit(req, res, () => (went = true));
    expect(went).toBe(true);
    return res;
  }

  it('takes the decoded bytes of a request alone in the budget, and refuses them (503) when others hold it', () => {
    const budget = new BodyBudget(1000, 5000);
    const alone = admitted(budget, 900);
    expect(budget.growDecoded(alone, 500)).toBeUndefined();
    expect(budget.inUse).toBe(1400);
    (alone as unknown as EventEmitter).emit('close');
    expect(budget.inUse).toBe(0);
    const a = admitted(budget, 400);
    const b = admitted(budget, 400);
    expect(budget.growDecoded(a, 100)).toBeUndefined();
    expect(budget.growDecoded(b, 500)?.code).toBe('UNAVAILABLE');
    expect(budget.inUse).toBe(900);
  });
});

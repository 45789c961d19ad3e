import Redis from 'ioredis';
import { startRedis, type RedisServer } from '../../../test/helpers/redis-server';
import { until } from '../../../test/helpers/poll';
import type { CancelMessage, ExecuteBatchMessage, TransportMessage } from './messages';
import type { Delivery } from './port';
import { RedisPort } from './redis-port';

/** The Redis port's outbox: a turn's commands go to Redis together, in order. */
let redis: RedisServer;
let probe: Redis;
const prefix = `nereid-outbox-${process.pid}:`;

beforeAll(async () => {
  redis = await startRedis();
  probe = new Redis(redis.url);
});
afterAll(async () => {
  probe?.disconnect();
  if (redis && !redis.external) await redis.stop();
});

/** How many times Redis has run `command` (INFO commandstats). */
async function calls(command: string): Promise<number> {
  const info = await probe.info('commandstats');
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
}

const batch = (batchId: string, bytes = 0): ExecuteBatchMessage => ({
  kind: 'execute-batch', batchId, key: 'k/1/0', instance: 0, slot: 0,
  requests: bytes === 0 ? [] : [{
    requestId: batchId, replyTo: 'gw', clientId: '', modelName: 'k', modelVersion: -1, parameters: {},
    inputs: [{ name: 'IN', datatype: 'UINT8', shape: [bytes], data: new Uint8Array(bytes).fill(7) }],
    correlationId: 0n, flags: { sequenceStart: false, sequenceEnd: false }, priority: 0, timeoutUs: 0,
  }],
});

describe('redis port: one pipeline per event-loop turn', () => {
  it("puts one turn's sends to a mailbox in one stream entry, delivered in order", async () => {
    const port = await RedisPort.connect({ url: redis.url, prefix });
    try {
      const ids = Array.from({ length: 50 }, (_, i) => `r${i}`);
      await Promise.all(ids.map((requestId) => port.send('turn', { kind: 'cancel', requestId })));
      const entries = await probe.xrange(`${prefix}m:turn`, '-', '+');
      expect(entries).toHaveLength(1);
      expect(entries[0][1]).toHaveLength(100); // 50 × (field, message)

      const got: TransportMessage[] = [];
      await port.receive('turn', (m) => got.push(m));
      await until('50 messages', () => got.length === 50, 10_000);
      expect(got.map((m) => (m as CancelMessage).requestId)).toEqual(ids);
      await until('the read entry deleted', async () => (await probe.xlen(`${prefix}m:turn`)) === 0, 10_000);
    } finally {
      await port.close();
    }
  });

  it("acks one turn's deliveries with one XACK and one XDEL", async () => {
    const [producer, consumer] = [await RedisPort.connect({ url: redis.url, prefix }), await RedisPort.connect({ url: redis.url, prefix })];
    try {
      const held: Delivery[] = [];
      await consumer.consume('acks', (d) => held.push(d), { prefetch: 32 });
      await Promise.all(Array.from({ length: 20 }, (_, i) => producer.enqueue('acks', batch(`b${i}`))));
      await until('20 deliveries', () => held.length === 20, 10_000);
      const [xack, xdel] = [await calls('xack'), await calls('xdel')];
      await Promise.all(held.map((d) => d.ack()));
      expect(await calls('xack')).toBe(xack + 1);
      expect(await calls('xdel')).toBe(xdel + 1);
      expect(await probe.xlen(`${prefix}q:acks`)).toBe(0);
      expect(await probe.xpending(`${prefix}q:acks`, 'nereid')).toEqual([0, null, null, null]);
    } finally {
      await producer.close();
      await consumer.close();
    }
  });

  it('keeps a large message in its place among the small ones of its turn', async () => {
    const [producer, consumer] = [await RedisPort.connect({ url: redis.url, prefix }), await RedisPort.connect({ url: redis.url, prefix })];
    try {
      const got: Delivery[] = [];
      await consumer.consume('mixed', (d) => {
        got.push(d);
        void d.ack();
      });
      const sizes = [0, 0, 1024 * 1024, 0, 512 * 1024, 0];
      await Promise.all(sizes.map((bytes, i) => producer.enqueue('mixed', batch(`b${i}`, bytes))));
      await until('6 deliveries', () => got.length === 6, 10_000);
      expect(got.map((d) => (d.message as ExecuteBatchMessage).batchId)).toEqual(sizes.map((_, i) => `b${i}`));
      const big = (got[2].message as ExecuteBatchMessage).requests[0].inputs[0].data as Uint8Array;
      expect(big.byteLength).toBe(1024 * 1024);
      expect(big.every((b) => b === 7)).toBe(true);
    } finally {
      await producer.close();
      await consumer.close();
    }
  });
});

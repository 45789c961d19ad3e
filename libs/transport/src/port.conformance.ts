/**
 * The one conformance suite of MessagePort adapters (in-memory-port.spec.ts and redis-port.spec.ts
 * run it): what the roles rely on, whichever adapter carries their messages. Each test uses names
 * of its own, so adapters need no cleanup between tests. Not a spec file itself: it only defines
 * the suite.
 */
import { randomUUID } from 'node:crypto';
import type { Tensor } from '@nereid/tensor';
import { sleep, until } from '../../../test/helpers/poll';
import type { ExecuteBatchMessage, LifecycleMessage, ResponseMessage, TransportMessage, WireRequest } from './messages';
import { Names, type Delivery, type MessagePort } from './port';
import { CancelRegistry, ResponseRouter } from './response-router';

export interface PortFixture {
  /** A new port on the shared broker, as a new process would open it. */
  open(): Promise<MessagePort>;
  /** A consumer's claim time short enough for tests and long enough for the adapter's round trips. */
  claimIdleMs: number;
}

const unique = (what: string): string => `${what}-${randomUUID().slice(0, 8)}`;

function wireRequest(requestId: string, replyTo: string, inputs: Tensor[] = []): WireRequest {
  return {
    requestId, replyTo, clientId: '', modelName: 'simple', modelVersion: -1, inputs, parameters: {},
    correlationId: 0n, flags: { sequenceStart: false, sequenceEnd: false }, priority: 0, timeoutUs: 0,
  };
}

function batchOf(batchId: string, requests: WireRequest[] = []): ExecuteBatchMessage {
  return { kind: 'execute-batch', batchId, key: 'simple/1/0', instance: 0, slot: 0, requests };
}

const batchIds = (ds: Delivery[]): string[] => ds.map((d) => (d.message as ExecuteBatchMessage).batchId);

export function describePortConformance(adapter: string, fixture: () => PortFixture): void {
  describe(`MessagePort conformance: ${adapter}`, () => {
    const opened: MessagePort[] = [];
    const open = async (): Promise<MessagePort> => {
      const p = await fixture().open();
      opened.push(p);
      return p;
    };

    afterEach(async () => {
      await Promise.all(opened.splice(0).map((p) => p.close()));
    });

    it('delivers a queue in the order it was enqueued, one message to one consumer', async () => {
      const [producer, a, b] = [await open(), await open(), await open()];
      const queue = unique('order');
      const single: Delivery[] = [];
      const sub = await a.consume(queue, (d) => {
        single.push(d);
        void d.ack();
      }, { prefetch: 4 });
      const ids = Array.from({ length: 60 }, (_, i) => `b${i}`);
      for (const id of ids) await producer.enqueue(queue, batchOf(id));
      await until('60 deliveries', () => single.length === 60, 10_000);
      expect(batchIds(single)).toEqual(ids);
      await sub.close();

      // Two consumers: each message to one of them, each consumer's share in order.
      const queue2 = unique('share');
      const got: Record<string, Delivery[]> = { a: [], b: [] };
      for (const [name, port] of [['a', a], ['b', b]] as const) {
        await port.consume(queue2, (d) => {
          got[name].push(d);
          void d.ack();
        }, { prefetch: 2 });
      }
      for (const id of ids) await producer.enqueue(queue2, batchOf(id));
      await until('60 deliveries to two consumers', () => got.a.length + got.b.length === 60, 10_000);
      await sleep(100);
      expect([...batchIds(got.a), ...batchIds(got.b)].sort()).toEqual([...ids].sort());
      for (const share of [got.a, got.b]) {
        const order = batchIds(share).map((id) => Number(id.slice(1)));
        expect(order).toEqual([...order].sort((x, y) => x - y));
        expect(share.every((d) => !d.redelivered)).toBe(true);
      }
    });

    it('redelivers what a consumer that died had not acked to another consumer; acked messages never', async () => {
      const { claimIdleMs } = fixture();
      const [producer, doomed, survivor] = [await open(), await open(), await open()];
      const queue = unique('death');
      const held: Delivery[] = [];
      await doomed.consume(queue, (d) => {
        held.push(d);
        if ((d.message as ExecuteBatchMessage).batchId === 'b0') void d.ack();
      }, { claimIdleMs, prefetch: 8 });
      for (let i = 0; i < 4; i++) await producer.enqueue(queue, batchOf(`b${i}`));
      await until('the doomed consumer holds 4', () => held.length === 4, 10_000);
      await sleep(100); // its ack of b0 lands
      await doomed.close(); // dies holding b1..b3

      const again: Delivery[] = [];
      const started = Date.now();
      await survivor.consume(queue, (d) => {
        again.push(d);
        void d.ack();
      }, { claimIdleMs });
      await until('b1..b3 redelivered', () => again.length === 3, claimIdleMs * 10 + 5000);
      expect(batchIds(again).sort()).toEqual(['b1', 'b2', 'b3']);
      expect(again.every((d) => d.redelivered)).toBe(true);
      expect(Date.now() - started).toBeLessThan(claimIdleMs * 10 + 5000);
      await sleep(claimIdleMs * 2);
      expect(again).toHaveLength(3); // acked: not delivered again
    });

    it('keeps a message its consumer touches while working on it, and gives it to the next when it stops', async () => {
      const { claimIdleMs } = fixture();
      const [producer, worker, other] = [await open(), await open(), await open()];
      const queue = unique('touch');
      let mine: Delivery | undefined;
      await worker.consume(queue, (d) => (mine = d), { claimIdleMs });
      await producer.enqueue(queue, batchOf('long'));
      await until('the worker has it', () => mine !== undefined, 10_000);
      const stolen: Delivery[] = [];
      await other.consume(queue, (d) => stolen.push(d), { claimIdleMs });
      const until3 = Date.now() + claimIdleMs * 3;
      while (Date.now() < until3) {
        await mine!.touch();
        await sleep(claimIdleMs / 4);
      }
      expect(stolen).toHaveLength(0);
      await until('claimed once the worker stops touching', () => stolen.length === 1, claimIdleMs * 10 + 5000);
      expect(stolen[0].redelivered).toBe(true);
      await stolen[0].ack();
    });

    it('carries tens of MiB of tensors through a queue and back through a mailbox, byte for byte', async () => {
      const [gateway, worker] = [await open(), await open()];
      const queue = unique('large');
      const mailbox = unique('gw');
      const input = new Float32Array(4 * 1024 * 1024); // 16 MiB
      for (let i = 0; i < input.length; i += 1021) input[i] = i;
      const responses: TransportMessage[] = [];
      await gateway.receive(mailbox, (m) => responses.push(m));
      await worker.consume(queue, (d) => {
        const batch = d.message as ExecuteBatchMessage;
        const x = batch.requests[0].inputs[0];
        const out: ResponseMessage = {
          kind: 'response', requestId: batch.requests[0].requestId, final: true,
          response: { id: '', modelName: 'simple', modelVersion: '1', outputs: [{ ...x, name: 'OUT' }] },
        };
        void worker.send(batch.requests[0].replyTo, out).then(() => d.ack());
      });
      const t: Tensor = { name: 'IN', datatype: 'FP32', shape: [1, input.length], data: input };
      await gateway.enqueue(queue, batchOf('big', [wireRequest('r1', mailbox, [t])]));
      await until('the 16 MiB answer', () => responses.length === 1, 30_000);
      const out = (responses[0] as ResponseMessage).response!.outputs[0];
      expect(out.shape).toEqual([1, input.length]);
      const data = out.data as Float32Array;
      expect(Buffer.from(data.buffer, data.byteOffset, data.byteLength).equals(Buffer.from(input.buffer))).toBe(true);
    });

    it('routes each response to the gateway that holds the request, and only there', async () => {
      const [gwA, gwB, worker] = [await open(), await open(), await open()];
      const routers = [new ResponseRouter(gwA, unique('A')), new ResponseRouter(gwB, unique('B'))];
      for (const r of routers) await r.start();
      const queue = unique('work');
      await worker.consume(queue, (d) => {
        const batch = d.message as ExecuteBatchMessage;
        void (async () => {
          for (const req of batch.requests) {
            const value = Number(req.requestId.split(':')[1]);
            // A decoupled-style answer: one response, then a flag-only final.
            await worker.send(req.replyTo, {
              kind: 'response', requestId: req.requestId, final: false,
              response: { id: req.clientId, modelName: req.modelName, modelVersion: '1',
                outputs: [{ name: 'OUT', datatype: 'INT32', shape: [1], data: new Int32Array([value]) }] },
            });
            await worker.send(req.replyTo, { kind: 'response', requestId: req.requestId, final: true });
          }
          await d.ack();
        })();
      });
      const seen = new Map<string, ResponseMessage[]>();
      const requests: WireRequest[] = [];
      for (const router of routers) {
        for (let i = 0; i < 5; i++) {
          const id = router.nextRequestId();
          seen.set(id, []);
          router.register(id, { onResponse: (m) => seen.get(id)!.push(m) });
          requests.push({ ...wireRequest(id, router.mailbox), clientId: `c-${id}` });
        }
      }
      // One batch mixes both gateways' requests, as a scheduler's would.
      await gwA.enqueue(queue, batchOf('mixed', requests));
      await until('every request final', () => routers.every((r) => r.pending === 0), 10_000);
      for (const [id, got] of seen) {
        expect(got.map((m) => m.final)).toEqual([false, true]);
        expect(got.every((m) => m.requestId === id)).toBe(true);
        expect(Array.from(got[0].response!.outputs[0].data as Int32Array)).toEqual([Number(id.split(':')[1])]);
      }
      expect(routers.map((r) => r.dropped)).toEqual([0, 0]);
      for (const r of routers) await r.stop();
    });

    it('routes a cancel to whoever holds the request; later responses for it are dropped', async () => {
      const [gateway, w1, w2] = [await open(), await open(), await open()];
      const router = new ResponseRouter(gateway, unique('gw'));
      await router.start();
      const registries = [new CancelRegistry(w1), new CancelRegistry(w2)];
      for (const r of registries) await r.start();
      const gone = router.nextRequestId();
      const kept = router.nextRequestId();
      const signals = [registries[0].track(gone), registries[1].track(kept)];
      const answers: ResponseMessage[] = [];
      router.register(gone, { onResponse: (m) => answers.push(m) });
      router.register(kept, { onResponse: (m) => answers.push(m) });
      await router.cancel(gone);
      await until('the holder of the cancelled request is told', () => signals[0].aborted, 10_000);
      await sleep(100);
      expect(signals[1].aborted).toBe(false);
      expect(router.pending).toBe(1);
      await w1.send(router.mailbox, { kind: 'response', requestId: gone, final: true, error: { code: 'CANCELLED', message: 'x' } });
      await w2.send(router.mailbox, { kind: 'response', requestId: kept, final: true, error: { code: 'INTERNAL', message: 'y' } });
      await until('the kept request answered', () => answers.length === 1, 10_000);
      await until('the cancelled one dropped', () => router.dropped === 1, 10_000);
      expect(answers.map((a) => a.requestId)).toEqual([kept]);
      for (const r of registries) await r.stop();
      await router.stop();
    });

    it('broadcasts to every subscriber, not to one that unsubscribed', async () => {
      const ports = [await open(), await open(), await open()];
      const topic = unique(Names.lifecycleTopic);
      const got: TransportMessage[][] = [[], [], []];
      const subs = [];
      for (let i = 0; i < 3; i++) subs.push(await ports[i].subscribe(topic, (m) => got[i].push(m)));
      const sameProcess: TransportMessage[] = [];
      await ports[0].subscribe(topic, (m) => sameProcess.push(m));
      const ready: LifecycleMessage = { kind: 'lifecycle', model: 'simple', version: 1, state: 'READY', reason: '', key: 'simple/1/0' };
      await ports[1].publish(topic, ready);
      await until('all three subscribers', () => got.every((g) => g.length === 1) && sameProcess.length === 1, 10_000);
      expect(got.map((g) => g[0])).toEqual([ready, ready, ready]);
      await subs[2].close();
      const gone: LifecycleMessage = { ...ready, state: 'UNLOADING' };
      await ports[0].publish(topic, gone);
      await until('the two still subscribed', () => got[0].length === 2 && got[1].length === 2, 10_000);
      await sleep(100);
      expect(got[2]).toHaveLength(1);
    });

    it('refuses to send on a closed port, with UNAVAILABLE', async () => {
      const p = await open();
      await p.close();
      await expect(p.enqueue(unique('q'), batchOf('x'))).rejects.toMatchObject({ code: 'UNAVAILABLE' });
      await expect(p.publish(unique('t'), { kind: 'cancel', requestId: 'r' })).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    });
  });
}

import { InMemoryBroker, InMemoryPort, type ExecuteBatchMessage, type MessagePort, type TransportMessage } from '@nereid/transport';
import { BatchDispatches } from './batch-dispatches';

const batch = (batchId: string, bytes = 64): ExecuteBatchMessage => ({
  kind: 'execute-batch', batchId, key: 'simple/1', instance: 0, slot: 0, fence: 3,
  requests: [{
    requestId: `r-${batchId}`, replyTo: 'gw', clientId: '', modelName: 'simple', modelVersion: 1,
    inputs: [{ name: 'INPUT0', datatype: 'UINT8', shape: [bytes], data: new Uint8Array(bytes) }],
    parameters: {}, correlationId: 0n, flags: { sequenceStart: false, sequenceEnd: false }, priority: 0, timeoutUs: 0,
  }],
});

const ids = (m: TransportMessage): string[] => (m.kind === 'execute-batch' ? [m.batchId, ...(m.more ?? []).map((b) => b.batchId)] : []);

describe('BatchDispatches', () => {
  it("enqueues the batches of one tick as one message per queue (the first, then 'more'), leaves each batch's own message as it was, and sends large ones at once", async () => {
    const port = new InMemoryPort(new InMemoryBroker());
    const got: Array<[string, TransportMessage]> = [];
    for (const q of ['work:w1', 'work:w2']) {
      await port.consume(q, (d) => {
        got.push([q, d.message]);
        void d.ack();
      });
    }
    const dispatches = new BatchDispatches(port);
    const first = batch('s:1');
    dispatches.add('work:w1', first, () => undefined);
    dispatches.add('work:w2', batch('s:2'), () => undefined);
    await Promise.resolve().then(() => dispatches.add('work:w1', batch('s:3'), () => undefined));
    await new Promise((r) => setImmediate(r));
    dispatches.add('work:w1', batch('s:4'), () => undefined);
    // 1 MiB of inputs: sent before the tick ends, alone.
    dispatches.add('work:w2', batch('s:5', 1024 * 1024), () => undefined);
    await new Promise((r) => setTimeout(r, 20));
    expect(got.map(([q, m]) => [q, ids(m)])).toEqual([
      ['work:w1', ['s:1', 's:3']],
      ['work:w2', ['s:2']],
      ['work:w2', ['s:5']],
      ['work:w1', ['s:4']],
    ]);
    expect(first.more).toBeUndefined();
    await port.close();
  });

  it('tells each batch of a message that could not be enqueued', async () => {
    const port = { enqueue: () => Promise.reject(new Error('Redis is gone')) } as unknown as MessagePort;
    const dispatches = new BatchDispatches(port);
    const failed: string[] = [];
    dispatches.add('work:w1', batch('s:1'), (e) => failed.push(`s:1 ${(e as Error).message}`));
    dispatches.add('work:w1', batch('s:2'), (e) => failed.push(`s:2 ${(e as Error).message}`));
    await new Promise((r) => setImmediate(r));
    expect(failed).toEqual(['s:1 Redis is gone', 's:2 Redis is gone']);
  });
});

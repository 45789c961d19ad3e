import { InMemoryBroker, InMemoryPort, type BatchDoneMessage, type TransportMessage } from '@nereid/transport';
import { BatchReports } from './batch-reports';

const report = (batchId: string, key = 'simple/1'): BatchDoneMessage => ({
  kind: 'batch-done', batchId, key, workerId: 'w1', batchSize: 1, requestCount: 1, compute: { inputNs: 0, inferNs: 0, outputNs: 0 },
});

describe('BatchReports', () => {
  it("sends the reports of one tick as one message per queue (the first, then 'more' in order), and each later tick's apart", async () => {
    const port = new InMemoryPort(new InMemoryBroker());
    const got: Array<[string, TransportMessage]> = [];
    for (const q of ['requests:simple/1', 'requests:other/1']) {
      await port.consume(q, (d) => {
        got.push([q, d.message]);
        void d.ack();
      });
    }
    const reports = new BatchReports(port);
    // Batches that one callback resolves: their promise reactions all run before the tick ends.
    await Promise.all(['s:1', 's:2', 's:3'].map((id) => Promise.resolve().then(() => reports.add('requests:simple/1', report(id)))));
    reports.add('requests:other/1', report('s:9', 'other/1'));
    await new Promise((r) => setImmediate(r));
    reports.add('requests:simple/1', report('s:4'));
    await new Promise((r) => setTimeout(r, 20));
    const ids = (m: TransportMessage): string[] => (m.kind === 'batch-done' ? [m.batchId, ...(m.more ?? []).map((r) => r.batchId)] : []);
    expect(got.map(([q, m]) => [q, ids(m)])).toEqual([
      ['requests:simple/1', ['s:1', 's:2', 's:3']],
      ['requests:other/1', ['s:9']],
      ['requests:simple/1', ['s:4']],
    ]);
    expect(got[0][1]).toMatchObject({ kind: 'batch-done', key: 'simple/1', workerId: 'w1', batchSize: 1, requestCount: 1 });
    await port.close();
  });
});

import { InMemoryBroker, InMemoryPort } from './in-memory-port';
import type { ResponseMessage } from './messages';
import { ResponseRouter } from './response-router';

const answer = (requestId: string, value: number): ResponseMessage => ({
  kind: 'response', requestId, final: true,
  response: { id: requestId, modelName: 'm', modelVersion: '1', outputs: [{ name: 'OUT', datatype: 'INT32', shape: [1], data: Int32Array.from([value]) }] },
});

describe('ResponseRouter: a request answered twice (its batch ran again after a take-over)', () => {
  it('gives the client the first final answer only, and counts the second as dropped', async () => {
    const port = new InMemoryPort(new InMemoryBroker());
    const router = new ResponseRouter(port, 'gw1');
    await router.start();
    try {
      const got: ResponseMessage[] = [];
      const id = router.nextRequestId();
      router.register(id, { onResponse: (m) => got.push(m) });
      // The batch the dead scheduler handed out, and the new holder's run of the same request.
      await port.send(router.mailbox, answer(id, 1));
      await port.send(router.mailbox, answer(id, 2));
      // A later error for it (a stale failure) is dropped too.
      await port.send(router.mailbox, { kind: 'response', requestId: id, final: true, error: { code: 'UNAVAILABLE', message: 'late' } });
      await new Promise((r) => setImmediate(r));
      expect(got).toHaveLength(1);
      expect(Array.from(got[0].response!.outputs[0].data as Int32Array)).toEqual([1]);
      expect(router.dropped).toBe(2);
      expect(router.pending).toBe(0);
    } finally {
      await router.stop();
      await port.close();
    }
  });
});

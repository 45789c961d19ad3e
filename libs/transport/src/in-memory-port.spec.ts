import { InMemoryBroker, InMemoryPort } from './in-memory-port';
import { describePortConformance } from './port.conformance';

const broker = new InMemoryBroker();
describePortConformance('in-memory', () => ({ open: async () => new InMemoryPort(broker), claimIdleMs: 500 }));

describe('in-memory port', () => {
  it('passes messages by reference, tensors included (no copy, no encoding)', async () => {
    const port = new InMemoryPort(new InMemoryBroker());
    const data = new Float32Array([1, 2, 3]);
    const message = {
      kind: 'response' as const, requestId: 'r', final: true,
      response: { id: '', modelName: 'm', modelVersion: '1', outputs: [{ name: 'o', datatype: 'FP32' as const, shape: [3], data }] },
    };
    let got: unknown;
    await port.receive('gw', (m) => (got = m));
    await port.send('gw', message);
    await new Promise((r) => setImmediate(r));
    expect(got).toBe(message);
    await port.close();
  });
});

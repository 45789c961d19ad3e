import * as net from 'node:net';
import { freePort, portSlice, PORT_RANGE } from './ports';

describe('freePort (test/helpers)', () => {
  it('gives each jest worker its own slice, all below the ephemeral range', () => {
    const slices = [1, 2, 3, 4, 5, 6, 7, 8].map(portSlice);
    for (const s of slices) {
      expect(s.first).toBeGreaterThanOrEqual(PORT_RANGE.first);
      expect(s.last).toBeLessThan(32768);
      expect(s.last).toBeGreaterThan(s.first + 100);
    }
    for (let i = 1; i < slices.length; i++) expect(slices[i].first).toBeGreaterThan(slices[i - 1].last);
  });

  it('hands out distinct ports of this worker, skipping one that something listens on', async () => {
    const mine = portSlice(Number(process.env.JEST_WORKER_ID ?? '1'));
    const first = await freePort();
    // Occupy the next port of the slice: the search goes on past it.
    const busyPort = first === mine.last ? mine.first : first + 1;
    const busy = net.createServer();
    await new Promise<void>((resolve, reject) => {
      busy.once('error', reject);
      busy.listen(busyPort, '127.0.0.1', resolve);
    });
    try {
      const ports = [first];
      for (let i = 0; i < 20; i++) ports.push(await freePort());
      expect(new Set(ports).size).toBe(ports.length);
      expect(ports).not.toContain(busyPort);
      for (const p of ports) {
        expect(p).toBeGreaterThanOrEqual(mine.first);
        expect(p).toBeLessThanOrEqual(mine.last);
      }
    } finally {
      await new Promise((resolve) => busy.close(resolve));
    }
  });
});

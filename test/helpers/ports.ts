/** Loopback ports for the processes a test starts. */
import * as net from 'node:net';

/** Ports this test process has handed out: the kernel may offer a port again once it was closed. */
const handedOut = new Set<number>();

/**
 * A TCP port free on 127.0.0.1 when asked, never one this process handed out before: the ports are
 * bound later by the processes they are given to, so the kernel may offer the same port to the next
 * ask (a fresh-clone CI run gave one worker the same port for HTTP and metrics: EADDRINUSE).
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const s = net.createServer();
      s.on('error', reject);
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Triton's health endpoints for a process with no front door (a scheduler-only role): the
 * deployment's probes (docker/k8s) ask `/v2/health/live` and `/v2/health/ready` on the HTTP port.
 * Ready while `ready()` says so (the role has started and its transport is up).
 */
export async function startHealthEndpoint(host: string, port: number, ready: () => boolean): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const ok = path === '/v2/health/live' || (path === '/v2/health/ready' && ready());
    const known = path === '/v2/health/live' || path === '/v2/health/ready';
    res.writeHead(ok ? 200 : known ? 400 : 404, { 'content-length': '0' }).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

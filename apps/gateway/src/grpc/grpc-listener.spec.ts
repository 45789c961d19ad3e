import * as http2 from 'node:http2';
import * as net from 'node:net';
import { Server, ServerCredentials, status } from '@grpc/grpc-js';
import { ConnectionBudget } from '../connection-budget';
import { listenGrpc, type GrpcListener } from './grpc-listener';
import { freePort } from '../../../../test/helpers/ports';

/** The grpc-status of a call to a method no service has (grpc-js answers UNIMPLEMENTED): the connection reached grpc-js. */
function unknownCall(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://localhost:${port}`);
    session.on('error', reject);
    const stream = session.request({ ':method': 'POST', ':path': '/no.Such/Method', 'content-type': 'application/grpc', te: 'trailers' });
    stream.on('response', (h) => {
      session.destroy();
      resolve(String(h['grpc-status']));
    });
    stream.on('error', reject);
    stream.end(Buffer.alloc(5));
  });
}

describe('listenGrpc', () => {
  const open: GrpcListener[] = [];
  const servers: Server[] = [];
  async function start(host: string, port: number, connections = new ConnectionBudget(8), prefaceTimeoutMs = 300, idleMs?: number): Promise<GrpcListener> {
    const server = new Server(idleMs ? { 'grpc.max_connection_idle_ms': idleMs } : {});
    servers.push(server);
    const listener = await listenGrpc(server, ServerCredentials.createInsecure(), { host, port, connections, prefaceTimeoutMs });
    open.push(listener);
    return listener;
  }

  afterEach(async () => {
    await Promise.all(open.splice(0).map((l) => l.close()));
    for (const s of servers.splice(0)) s.forceShutdown();
  });

  it('hands connections to grpc-js, on every address a name resolves to, and counts them in the budget', async () => {
    const budget = new ConnectionBudget(8);
    const listener = await start('localhost', await freePort(), budget);
    expect(await unknownCall(listener.port)).toBe(String(status.UNIMPLEMENTED));
    expect(budget.refused).toBe(0);
  });

  it('closes a connection that has not sent the HTTP/2 preface within the timeout', async () => {
    const listener = await start('127.0.0.1', await freePort());
    const silent = net.connect(listener.port, '127.0.0.1');
    silent.on('error', () => undefined);
    const started = Date.now();
    await new Promise((r) => silent.once('close', r));
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    // A client that speaks goes on being served after the timeout.
    expect(await unknownCall(listener.port)).toBe(String(status.UNIMPLEMENTED));
  });

  it('lets grpc-js close an HTTP/2 connection that makes no call (grpc.max_connection_idle_ms), on connections it was handed', async () => {
    const listener = await start('127.0.0.1', await freePort(), new ConnectionBudget(8), 5000, 300);
    const session = http2.connect(`http://127.0.0.1:${listener.port}`);
    session.on('error', () => undefined);
    const goaway = new Promise((r) => session.once('goaway', r));
    const started = Date.now();
    await goaway;
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    session.destroy();
  });

  it('closes at once, ending the connections still waiting for their preface (a shutdown is not held until their timeout)', async () => {
    const listener = await start('127.0.0.1', await freePort(), new ConnectionBudget(8), 20_000);
    const silent = net.connect(listener.port, '127.0.0.1');
    silent.on('error', () => undefined);
    const ended = new Promise((r) => silent.once('close', r));
    await new Promise((r) => silent.once('connect', r));
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await listener.close();
    await ended;
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('fails to start when the port is taken', async () => {
    const first = await start('127.0.0.1', await freePort());
    await expect(start('127.0.0.1', first.port)).rejects.toMatchObject({ code: 'EADDRINUSE' });
  });
});

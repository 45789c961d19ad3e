import * as net from 'node:net';
import { ConnectionBudget } from './connection-budget';
import { freePort } from '../../../test/helpers/ports';

/** A loopback server whose connections pass `budget`; it echoes nothing and keeps every socket. */
async function serverWith(budget: ConnectionBudget): Promise<{ port: number; close(): Promise<void> }> {
  const sockets: net.Socket[] = [];
  const server = net.createServer((s) => {
    sockets.push(s);
    s.on('error', () => undefined);
    // Read (and drop) what comes, as a real door does: a client's close is seen.
    s.resume();
  });
  budget.guard(server);
  const port = await freePort();
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return {
    port,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

/** A client connection, and a promise of its close. */
async function connect(port: number, send?: string): Promise<{ socket: net.Socket; closed: Promise<void> }> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  await new Promise((r) => socket.once('connect', r));
  if (send) socket.write(send);
  // The server has accepted it (and read what it sent) by then.
  await new Promise((r) => setTimeout(r, 50));
  return { socket, closed };
}

describe('ConnectionBudget', () => {
  it('closes a connection beyond the cap when none is silent, and counts connections until they close', async () => {
    const budget = new ConnectionBudget(2);
    const server = await serverWith(budget);
    const a = await connect(server.port, 'GET');
    const b = await connect(server.port, 'GET');
    expect(budget.inUse).toBe(2);
    const c = await connect(server.port);
    await c.closed;
    expect(budget.refused).toBe(1);
    a.socket.destroy();
    await new Promise((r) => setTimeout(r, 50));
    expect(budget.inUse).toBe(1);
    const d = await connect(server.port, 'GET');
    expect(d.socket.destroyed).toBe(false);
    expect(budget.inUse).toBe(2);
    for (const x of [b, d]) x.socket.destroy();
    await server.close();
  });

  it('makes room for a new connection by closing the oldest silent one (issue 16: silent connections kept new clients out)', async () => {
    const budget = new ConnectionBudget(3);
    const server = await serverWith(budget);
    const talking = await connect(server.port, 'GET');
    const silent1 = await connect(server.port);
    const silent2 = await connect(server.port);
    const fresh = await connect(server.port);
    await silent1.closed;
    expect(budget.evicted).toBe(1);
    expect(budget.refused).toBe(0);
    expect([talking, silent2, fresh].map((x) => x.socket.destroyed)).toEqual([false, false, false]);
    expect(budget.inUse).toBe(3);
    // The budget never holds more than its cap: the evicted one was uncounted at once.
    await new Promise((r) => setTimeout(r, 50));
    expect(budget.inUse).toBe(3);
    for (const x of [talking, silent2, fresh]) x.socket.destroy();
    await server.close();
  });
});

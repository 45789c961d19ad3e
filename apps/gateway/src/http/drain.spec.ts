import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { drainingClose } from './drain';

function request(agent: http.Agent, port: number): { sent: Promise<void>; answer: Promise<{ connection?: string; body: string }> } {
  let onSent!: () => void;
  const sent = new Promise<void>((resolve) => (onSent = resolve));
  const answer = new Promise<{ connection?: string; body: string }>((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ connection: res.headers.connection, body }));
    });
    req.on('finish', onSent);
    req.on('error', reject);
  });
  return { sent, answer };
}

describe('drainingClose', () => {
  it('answers the request in flight with Connection: close, then the server closes', async () => {
    const held: http.ServerResponse[] = [];
    let arrived!: () => void;
    const inFlight = new Promise<void>((resolve) => (arrived = resolve));
    const server = http.createServer((req, res) => {
      if (held.length === 0) {
        held.push(res);
        arrived();
        return;
      }
      res.end('later');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const close = drainingClose(server, () => new Promise<void>((resolve) => server.close(() => resolve())));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

    const first = request(agent, port);
    await first.sent;
    await inFlight;
    const closed = close();
    expect(close()).toBe(closed);
    held[0].end('first');
    expect(await first.answer).toEqual({ connection: 'close', body: 'first' });
    await closed;
    expect(server.listening).toBe(false);
    agent.destroy();
  });

  it('keeps connections alive while not draining', async () => {
    const server = http.createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const close = drainingClose(server, () => new Promise<void>((resolve) => server.close(() => resolve())));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    expect(await request(agent, port).answer).toEqual({ connection: 'keep-alive', body: 'ok' });
    agent.destroy();
    await close();
  });
});

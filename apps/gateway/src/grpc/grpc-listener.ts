import { lookup } from 'node:dns/promises';
import * as net from 'node:net';
import type { Server, ServerCredentials } from '@grpc/grpc-js';
import type { ConnectionBudget } from '../connection-budget';

/**
 * The gRPC port's own listening sockets: Nereid accepts the connections and hands them to grpc-js
 * (`Server.createConnectionInjector`, grpc-js >= 1.11), instead of letting grpc-js bind the port,
 * so that every connection is counted in the connection budget shared with the HTTP door and one
 * that stays silent is closed. grpc-js bound its own port before, where no limit could reach: 1,100
 * silent connections to it under `ulimit -n 1024` took every descriptor (issue 16).
 *
 * A connection is handed over once it has sent HTTP/2's client preface and the header of its first
 * SETTINGS frame; one that has not within `prefaceTimeoutMs` (--http-header-timeout-secs) is closed.
 * An HTTP/2 connection with no call for `grpc.max_connection_idle_ms` is closed by grpc-js itself
 * (GOAWAY). (With TLS credentials the first bytes are a TLS ClientHello: check that Node's TLS
 * server reads bytes put back on the socket before passing TLS credentials here.)
 */
export interface GrpcListenOptions {
  host: string;
  /** 0: any free port. */
  port: number;
  connections: ConnectionBudget;
  /** 0: never. */
  prefaceTimeoutMs: number;
}

export interface GrpcListener {
  port: number;
  /** Stops accepting connections and ends those still waiting for their preface (those handed over are grpc-js's to close); resolves once every one has closed. */
  close(): Promise<void>;
}

/** HTTP/2's client connection preface (24 bytes) and the frame header of the SETTINGS frame that must follow it. */
const PREFACE_BYTES = 24 + 9;

/** The addresses a bind address names: itself when it is an IP address, else every address it resolves to (as grpc-js binds them). */
async function addressesOf(host: string): Promise<string[]> {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (net.isIP(bare)) return [bare];
  const found = await lookup(bare, { all: true });
  return [...new Set(found.map((a) => a.address))];
}

function listen(server: net.Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
}

function closeServer(server: net.Server): Promise<void> {
  return new Promise((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
}

export async function listenGrpc(grpcServer: Server, credentials: ServerCredentials, options: GrpcListenOptions): Promise<GrpcListener> {
  const injector = grpcServer.createConnectionInjector(credentials);
  /** Connections accepted and not yet handed to grpc-js (waiting for their preface): close() ends them. */
  const waiting = new Set<net.Socket>();
  const accept = (socket: net.Socket): void => {
    // Silent (evictable when the budget is full) until its preface has come; a socket handed to grpc-js at once cannot be closed from here.
    if (!options.connections.admit(socket, options.prefaceTimeoutMs > 0 ? PREFACE_BYTES : 0)) return;
    if (options.prefaceTimeoutMs <= 0) return injector.injectConnection(socket);
    // Held here until the preface has come: once grpc-js's HTTP/2 session owns the socket,
    // destroying the socket no longer closes the connection.
    const chunks: Buffer[] = [];
    let have = 0;
    const timer = setTimeout(() => socket.destroy(), options.prefaceTimeoutMs);
    timer.unref();
    const onData = (data: Buffer): void => {
      chunks.push(data);
      have += data.length;
      if (have < PREFACE_BYTES) return;
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      waiting.delete(socket);
      socket.pause();
      // Node's HTTP/2 session reads what is buffered on the socket first.
      socket.unshift(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, have));
      injector.injectConnection(socket);
    };
    const onClose = (): void => {
      clearTimeout(timer);
      waiting.delete(socket);
    };
    waiting.add(socket);
    socket.on('data', onData);
    socket.once('close', onClose);
    socket.on('error', () => undefined);
  };
  const servers: net.Server[] = [];
  const closeAll = (): Promise<void> => {
    const closed = Promise.all(servers.map(closeServer)).then(() => undefined);
    // A net.Server closes once its last connection has: those grpc-js owns close with its shutdown,
    // those still waiting for their preface end now (they held a shutdown for the preface timeout,
    // and one whose preface came later was handed to a grpc-js server already shut down).
    for (const socket of waiting) socket.destroy();
    waiting.clear();
    return closed;
  };
  let port = options.port;
  let firstError: unknown;
  // Every address the host names, as grpc-js binds them: the server starts when one of them binds.
  for (const host of await addressesOf(options.host)) {
    const server = net.createServer(accept);
    try {
      port = await listen(server, host, port);
    } catch (e) {
      firstError ??= e;
      continue;
    }
    servers.push(server);
    // Errors of accept() (EMFILE, ENFILE: descriptors short for a moment) drop that connection; they must not end the process.
    server.on('error', () => undefined);
  }
  if (servers.length === 0) {
    injector.destroy();
    throw firstError ?? new Error(`no address to bind for '${options.host}'`);
  }
  return { port, close: closeAll };
}

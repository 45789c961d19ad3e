/**
 * Holding the server's budget of request bytes (--http-max-inflight-body-bytes) from outside: an
 * HTTP request whose declared body is charged whole before it is read, left half sent.
 */
import * as net from 'node:net';

/** An HTTP infer request to `model` declaring a `bytes` body and sending one byte of it: it holds `bytes` of the budget until the socket is destroyed. */
export function holdBudget(port: number, bytes: number, model = 'simple'): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(`POST /v2/models/${model}/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${bytes}\r\n\r\n{`);
      // Let the server read the headers and charge the body.
      setTimeout(() => resolve(socket), 200);
    });
    socket.on('error', reject);
  });
}

'use strict';
// A minimal HTTP/1.1 keep-alive client on a raw socket, for small JSON requests: one request in
// flight per connection. The load generator shares the machine's two cores with the server, so it
// does as little per request as it can: the whole request (request line, headers, body) is encoded
// before the timed part (`encodeRequest`), the socket reads into one buffer of the connection's own
// (`onread`: no Buffer per read, no 'data' events), and only the status line and the
// Content-Length are parsed; the body is handed back as a string for the caller to check.
// node:http's client costs more CPU per small request than this (see bench/http-infer/big-tensor.js
// for the same reasoning with large tensors).
const net = require('node:net');

const READ_BUFFER = 64 * 1024;
const CR = 0x0d;

/** The bytes of one POST of `body` (a JSON string) to `path`, ready to be written as they are. */
function encodeRequest(port, path, body) {
  return Buffer.from(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, 'utf8');
}

/** Index of the first \r\n\r\n in buf[from, to), or -1. */
function headEnd(buf, from, to) {
  for (let i = Math.max(0, from); i + 3 < to; i++) {
    if (buf[i] === CR && buf[i + 1] === 0x0a && buf[i + 2] === CR && buf[i + 3] === 0x0a) return i;
  }
  return -1;
}

class RawConnection {
  constructor(port) {
    this.port = port;
    this.pending = null;
    // The response so far: bytes [0, filled) of `acc`, grown only for a response over 64 KiB.
    this.acc = Buffer.allocUnsafe(READ_BUFFER);
    this.filled = 0;
    this.socket = net.connect({
      host: '127.0.0.1',
      port,
      onread: { buffer: Buffer.allocUnsafe(READ_BUFFER), callback: (n, buf) => this.onRead(n, buf) },
    });
    this.socket.setNoDelay(true);
    this.ready = new Promise((resolve, reject) => {
      this.socket.once('connect', resolve);
      this.socket.once('error', reject);
    });
    this.socket.on('error', (e) => this.fail(e));
    this.socket.on('close', () => this.fail(new Error('connection closed')));
  }

  fail(e) {
    const p = this.pending;
    this.pending = null;
    if (p) p.reject(e);
  }

  onRead(n, buf) {
    if (this.filled + n > this.acc.length) {
      const bigger = Buffer.allocUnsafe(Math.max(2 * this.acc.length, this.filled + n));
      this.acc.copy(bigger, 0, 0, this.filled);
      this.acc = bigger;
    }
    buf.copy(this.acc, this.filled, 0, n);
    const from = this.filled - 3;
    this.filled += n;
    const acc = this.acc;
    const end = headEnd(acc, from, this.filled);
    if (end < 0) return;
    // Content-Length: the one header read (the server always sends it for these answers).
    const head = acc.toString('latin1', 0, end);
    const at = head.search(/\r\ncontent-length:/i);
    if (at < 0) return this.fail(new Error(`response without content-length: ${head.split('\r\n')[0]}`));
    const total = end + 4 + parseInt(head.slice(at + 17), 10);
    if (this.filled < total) return;
    if (this.filled > total) return this.fail(new Error('more bytes than content-length (pipelined?)'));
    const status = (acc[9] - 48) * 100 + (acc[10] - 48) * 10 + (acc[11] - 48);
    const body = acc.toString('utf8', end + 4, total);
    this.filled = 0;
    const p = this.pending;
    this.pending = null;
    if (p) p.resolve({ status, body });
  }

  /** Writes `bytes` (from `encodeRequest`); resolves with `{ status, body }`. */
  send(bytes) {
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.socket.write(bytes);
    });
  }

  /** POSTs `body` (a string) to `path`, encoding it now; resolves with `{ status, body }`. */
  post(path, body) {
    return this.send(encodeRequest(this.port, path, body));
  }

  close() {
    this.socket.removeAllListeners('close');
    this.socket.destroy();
  }
}

module.exports = { RawConnection, encodeRequest };

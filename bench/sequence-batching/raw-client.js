'use strict';
// A minimal HTTP/1.1 keep-alive client on a raw socket, for small JSON requests: one request in
// flight per connection, the response read by its Content-Length. The load generator shares the
// machine's cores with the server; node:http's client costs more CPU per small request than this
// (see bench/http-infer/big-tensor.js for the same reasoning with large tensors).
const net = require('node:net');

class RawConnection {
  constructor(port) {
    this.port = port;
    this.pending = null;
    this.buffered = Buffer.alloc(0);
    this.socket = net.connect({ host: '127.0.0.1', port });
    this.socket.setNoDelay(true);
    this.ready = new Promise((resolve, reject) => {
      this.socket.once('connect', resolve);
      this.socket.once('error', reject);
    });
    this.socket.on('data', (d) => this.onData(d));
    this.socket.on('error', (e) => this.fail(e));
    this.socket.on('close', () => this.fail(new Error('connection closed')));
  }

  fail(e) {
    const p = this.pending;
    this.pending = null;
    if (p) p.reject(e);
  }

  onData(d) {
    this.buffered = this.buffered.length === 0 ? d : Buffer.concat([this.buffered, d]);
    const end = this.buffered.indexOf('\r\n\r\n');
    if (end < 0) return;
    const head = this.buffered.toString('latin1', 0, end);
    const m = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (!m) return this.fail(new Error(`response without content-length: ${head.split('\r\n')[0]}`));
    const total = end + 4 + Number(m[1]);
    if (this.buffered.length < total) return;
    const status = Number(head.slice(9, 12));
    const body = this.buffered.toString('utf8', end + 4, total);
    this.buffered = this.buffered.subarray(total);
    const p = this.pending;
    this.pending = null;
    if (p) p.resolve({ status, body });
  }

  /** POSTs `body` (a string) to `path`; resolves with `{ status, body }`. */
  post(path, body) {
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${this.port}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
  }

  close() {
    this.socket.removeAllListeners('close');
    this.socket.destroy();
  }
}

module.exports = { RawConnection };

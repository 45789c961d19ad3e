'use strict';
// A closed-loop HTTP/1.1 load generator on raw keep-alive sockets, for one pre-encoded request sent
// over and over: each connection writes the same bytes, waits for the whole answer (read by its
// Content-Length into one reused buffer, nothing decoded), records the latency and sends again.
//
// Why not autocannon: the load generator shares this machine's two cores with the server, and
// autocannon parses every response with a JavaScript HTTP parser and keeps per-request bookkeeping;
// under 32 connections of small requests it took about as much CPU as the server's main thread, so
// the batched side measured the client's CPU as much as the server's. Both sides of the bench use
// this same client in the same run.
const net = require('node:net');

const CRLF2 = 0x0d0a0d0a;

class Connection {
  constructor(port, message, onDone) {
    this.message = message;
    this.onDone = onDone;
    this.headEnd = -1;
    this.expected = -1;
    this.received = 0;
    this.status = 0;
    this.headBytes = [];
    this.started = 0;
    this.socket = net.connect({
      host: '127.0.0.1',
      port,
      onread: { buffer: Buffer.allocUnsafe(64 * 1024), callback: (n, buf) => this.onData(n, buf) },
    });
    this.socket.setNoDelay(true);
    this.ready = new Promise((resolve, reject) => {
      this.socket.once('connect', resolve);
      this.socket.once('error', reject);
    });
    this.socket.on('error', (e) => this.onDone(this, e));
  }

  send() {
    this.started = performance.now();
    this.socket.write(this.message);
  }

  onData(n, buf) {
    let chunk = buf.subarray(0, n);
    if (this.expected < 0) {
      // Status line and headers: rarely split, copied aside only when they are.
      let all = chunk;
      if (this.headBytes.length) {
        this.headBytes.push(Buffer.from(chunk));
        all = Buffer.concat(this.headBytes);
      }
      let end = -1;
      for (let i = 0; i + 3 < all.length; i++) {
        if (all.readUInt32BE(i) === CRLF2) {
          end = i;
          break;
        }
      }
      if (end < 0) {
        if (!this.headBytes.length) this.headBytes.push(Buffer.from(chunk));
        return;
      }
      const head = all.toString('latin1', 0, end);
      this.status = Number(head.slice(9, 12));
      const m = /\r\ncontent-length:\s*(\d+)/i.exec(head);
      if (!m) return this.onDone(this, new Error(`response without content-length: ${head.split('\r\n')[0]}`));
      this.expected = Number(m[1]);
      this.received = 0;
      this.headBytes = [];
      chunk = all.subarray(end + 4);
    }
    this.received += chunk.length;
    if (this.received < this.expected) return;
    if (this.received > this.expected) return this.onDone(this, new Error('more bytes than content-length (pipelined?)'));
    const status = this.status;
    this.expected = -1;
    this.onDone(this, status === 200 ? undefined : new Error(`HTTP ${status}`), performance.now() - this.started);
  }

  close() {
    this.socket.destroy();
  }
}

/**
 * Sends `body` to `path` on `connections` keep-alive connections for `seconds`, each connection one
 * request at a time. Resolves with { requests, rps, p50, p99 (ms), errors }.
 */
async function closedLoop({ port, path, body, headers, connections, seconds }) {
  const head = `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
    Object.entries({ ...headers, 'content-length': body.length }).map(([k, v]) => `${k}: ${v}\r\n`).join('') + '\r\n';
  const message = Buffer.concat([Buffer.from(head, 'latin1'), body]);
  const latencies = new Float64Array(1 << 20); // 8 MiB: 100k req/s for 10 s; later ones are counted, not timed
  let count = 0;
  let errors = 0;
  let firstError;
  let stopping = false;
  let open = connections;
  let finish;
  const finished = new Promise((resolve) => { finish = resolve; });
  const onDone = (conn, error, ms) => {
    if (error) {
      errors++;
      firstError ??= error;
      conn.close();
      if (--open === 0) finish();
      return;
    }
    if (count < latencies.length) latencies[count] = ms;
    count++;
    if (stopping) {
      conn.close();
      if (--open === 0) finish();
      return;
    }
    conn.send();
  };
  const conns = Array.from({ length: connections }, () => new Connection(port, message, onDone));
  await Promise.all(conns.map((c) => c.ready));
  const t0 = performance.now();
  for (const c of conns) c.send();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  stopping = true;
  const elapsed = (performance.now() - t0) / 1000;
  const counted = count;
  await finished;
  const sorted = latencies.slice(0, Math.min(count, latencies.length)).sort();
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { requests: counted, rps: counted / elapsed, p50: at(0.5), p99: at(0.99), errors, firstError };
}

module.exports = { closedLoop };

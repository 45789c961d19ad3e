'use strict';
// Sends the same large binary request repeatedly over keep-alive connections and reports payload
// throughput (request tensor bytes + response tensor bytes per second).
//
// The client is a minimal HTTP/1.1 client on raw sockets, in the spirit of wrk: each connection
// reads into one reused buffer (net.Socket's `onread`) and only counts the response body. The
// load generator shares this machine's two cores with the server, and node:http's client, which
// copies every 64 KiB chunk of a 4 MiB response into a fresh Buffer, spent more CPU per request
// than the server it was measuring (about 10 ms against 6-10 ms per 4 MiB request, measured with
// /proc/<pid>/stat), so it measured mostly itself. The first response of every run is read whole
// and checked: status 200 and the request's tensor bytes at the end of the body.
const net = require('node:net');

function makeBody(elems) {
  const data = Buffer.alloc(elems * 4);
  const f = new Float32Array(data.buffer, data.byteOffset, elems);
  for (let i = 0; i < elems; i++) f[i] = (i % 1000) * 0.5;
  const header = Buffer.from(JSON.stringify({
    inputs: [{ name: 'INPUT0', shape: [1, elems], datatype: 'FP32', parameters: { binary_data_size: data.length } }],
    parameters: { binary_data_output: true },
  }));
  return { body: Buffer.concat([header, data]), headerLength: header.length, payload: data.length, data };
}

const CRLF2 = Buffer.from('\r\n\r\n');

/** One keep-alive connection; `post()` sends the prepared request and resolves with the response. */
class Connection {
  constructor(port, head, body) {
    this.head = head;
    this.body = body;
    this.pending = null;
    this.reset();
    this.socket = net.connect({
      host: '127.0.0.1',
      port,
      onread: { buffer: Buffer.allocUnsafe(1 << 20), callback: (n, buf) => this.onData(buf, n) },
    });
    this.socket.setNoDelay(true);
    this.ready = new Promise((resolve, reject) => {
      this.socket.once('connect', resolve);
      this.socket.once('error', reject);
    });
    this.socket.on('error', (e) => this.fail(e));
    this.socket.on('close', () => this.fail(new Error('connection closed')));
  }

  reset() {
    this.headerBytes = [];
    this.headerLength = 0;
    this.remaining = -1;
    this.status = 0;
    this.collected = null;
  }

  fail(e) {
    const p = this.pending;
    this.pending = null;
    if (p) p.reject(e);
  }

  /** @param keep whether to keep the body (for checking); otherwise only its length is counted. */
  post(keep = false) {
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject, keep, length: 0 };
      if (keep) this.collected = [];
      this.socket.cork();
      this.socket.write(this.head);
      this.socket.write(this.body);
      this.socket.uncork();
    });
  }

  onData(buf, n) {
    let chunk = buf.subarray(0, n);
    if (this.remaining < 0) {
      // Still in the status line and headers (small: copy them aside until the blank line).
      this.headerBytes.push(Buffer.from(chunk));
      const all = Buffer.concat(this.headerBytes);
      const end = all.indexOf(CRLF2);
      if (end < 0) return;
      const text = all.subarray(0, end).toString('latin1');
      this.status = Number(text.slice(9, 12));
      const m = /\r\ncontent-length:\s*(\d+)/i.exec(text);
      if (!m) return this.fail(new Error(`response without content-length: ${text.split('\r\n')[0]}`));
      this.remaining = Number(m[1]);
      chunk = all.subarray(end + 4);
      this.headerBytes = [];
    }
    const p = this.pending;
    if (p && p.keep && chunk.length) this.collected.push(Buffer.from(chunk));
    this.remaining -= chunk.length;
    if (p) p.length += chunk.length;
    if (this.remaining > 0) return;
    if (this.remaining < 0) return this.fail(new Error('more bytes than content-length'));
    const collected = this.collected;
    const status = this.status;
    this.reset();
    this.pending = null;
    if (!p) return;
    if (status !== 200) {
      p.reject(new Error(`HTTP ${status}: ${collected ? Buffer.concat(collected).toString().slice(0, 300) : ''}`));
    } else {
      p.resolve({ length: p.length, body: collected && Buffer.concat(collected) });
    }
  }

  close() {
    this.socket.removeAllListeners('close');
    this.socket.destroy();
  }
}

/** Runs `total` requests with `concurrency` connections; returns payload GB/s (in + out) and p50 ms. */
async function measure(port, path, body, headers, payload, concurrency, total, expectTail) {
  const head = Buffer.from(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: keep-alive\r\n` +
    Object.entries({ ...headers, 'content-length': body.length }).map(([k, v]) => `${k}: ${v}\r\n`).join('') + '\r\n');
  const conns = Array.from({ length: concurrency }, () => new Connection(port, head, body));
  await Promise.all(conns.map((c) => c.ready));
  // One checked request per connection first (also the warm-up).
  for (const c of conns) {
    const r = await c.post(true);
    if (expectTail && !r.body.subarray(r.body.length - expectTail.length).equals(expectTail)) {
      throw new Error('response tensor bytes differ from the request');
    }
  }
  const latencies = [];
  let started = 0;
  const t0 = performance.now();
  await Promise.all(conns.map(async (c) => {
    while (started < total) {
      started++;
      const t = performance.now();
      await c.post();
      latencies.push(performance.now() - t);
    }
  }));
  const seconds = (performance.now() - t0) / 1000;
  for (const c of conns) c.close();
  latencies.sort((a, b) => a - b);
  return { gbps: (total * payload * 2) / seconds / 1e9, p50: latencies[Math.floor(latencies.length / 2)], rps: total / seconds };
}

module.exports = { makeBody, measure };

// As a script: `node big-tensor.js <port> <path> <elements> <concurrency> <total> [binary|raw]`
// prints the result as JSON. run.js measures in such a child process: its own heap, after
// minutes of autocannon, made every 4 MiB response cost it a full GC (both servers looked slower).
if (require.main === module) {
  const [port, urlPath, elems, concurrency, total, extra] = process.argv.slice(2);
  const { body, headerLength, payload, data } = makeBody(Number(elems));
  const headers = extra === 'binary'
    ? { 'inference-header-content-length': String(headerLength), 'content-type': 'application/octet-stream' }
    : { 'content-type': 'application/octet-stream' };
  measure(Number(port), urlPath, body, headers, payload, Number(concurrency), Number(total), data).then(
    (r) => process.stdout.write(`${JSON.stringify(r)}\n`),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}

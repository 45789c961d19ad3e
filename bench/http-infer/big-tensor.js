'use strict';
// Sends the same large binary request repeatedly over keep-alive connections and reports payload
// throughput (request tensor bytes + response tensor bytes per second).
const http = require('node:http');

function makeBody(elems) {
  const data = Buffer.alloc(elems * 4);
  new Float32Array(data.buffer, data.byteOffset, elems).fill(1.5);
  const header = Buffer.from(JSON.stringify({
    inputs: [{ name: 'INPUT0', shape: [1, elems], datatype: 'FP32', parameters: { binary_data_size: data.length } }],
    parameters: { binary_data_output: true },
  }));
  return { body: Buffer.concat([header, data]), headerLength: header.length, payload: data.length };
}

function post(agent, port, path, body, headers) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { ...headers, 'content-length': body.length } }, (res) => {
      let n = 0;
      res.on('data', (c) => (n += c.length));
      res.on('end', () => (res.statusCode === 200 ? resolve(n) : reject(new Error(`HTTP ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Runs `total` requests with `concurrency` in flight; returns payload GB/s (in + out) and p50 ms. */
async function measure(port, path, body, headers, payload, concurrency, total) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  await post(agent, port, path, body, headers);
  const latencies = [];
  let started = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (started < total) {
      started++;
      const t = performance.now();
      await post(agent, port, path, body, headers);
      latencies.push(performance.now() - t);
    }
  }));
  const seconds = (performance.now() - t0) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { gbps: (total * payload * 2) / seconds / 1e9, p50: latencies[Math.floor(latencies.length / 2)], rps: total / seconds };
}

module.exports = { makeBody, measure };

// As a script: `node big-tensor.js <port> <path> <elements> <concurrency> <total> [headers JSON]`
// prints the result as JSON. run.js measures in such a child process: its own heap, after
// minutes of autocannon, made every 4 MiB response cost it a full GC (both servers looked slower).
if (require.main === module) {
  const [port, urlPath, elems, concurrency, total, extra] = process.argv.slice(2);
  const { body, headerLength, payload } = makeBody(Number(elems));
  const headers = extra === 'binary'
    ? { 'inference-header-content-length': String(headerLength), 'content-type': 'application/octet-stream' }
    : {};
  measure(Number(port), urlPath, body, headers, payload, Number(concurrency), Number(total)).then(
    (r) => process.stdout.write(`${JSON.stringify(r)}\n`),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}

'use strict';
// The shared-memory side of bench/shared-memory, in a process of its own (as big-tensor.js is for the
// binary side): the calls of Triton's shared-memory clients on a 16 MB FP32 identity. It creates an
// input and an output object under /dev/shm, registers them, then sends the same small JSON request
// (inputs and outputs all in regions) over keep-alive connections, one per region pair, and counts
// payload throughput the way big-tensor.js does (input + output tensor bytes per second). Requests
// and responses are a few hundred bytes, so node:http's client costs little here.
//
// `--touch`: per request the client also writes the input into its region and reads the output back
// (what a client whose tensors change every request pays). Without it the input is written once, as
// perf_analyzer --shared-memory=system does. The first response's output is checked either way.
//
// Usage: node shm-client.js <port> <elements> <concurrency> <total> [--touch]   prints JSON
const fs = require('node:fs');
const http = require('node:http');

const [port, elemsArg, concArg, totalArg] = process.argv.slice(2);
const touch = process.argv.includes('--touch');
const elems = Number(elemsArg);
const concurrency = Number(concArg);
const bytes = elems * 4;
const base = `nereid-bench-shm-${process.pid}`;
const url = (p) => `http://127.0.0.1:${port}/v2/${p}`;

async function post(path, body) {
  const r = await fetch(url(path), { method: 'POST', body: body === undefined ? undefined : JSON.stringify(body) });
  if (r.status !== 200) throw new Error(`${path}: HTTP ${r.status} ${await r.text()}`);
}

async function main() {
  const input = Buffer.alloc(bytes);
  const f = new Float32Array(input.buffer, input.byteOffset, elems);
  for (let i = 0; i < elems; i++) f[i] = (i % 1000) * 0.5;
  // One input and one output region per connection: requests in flight never share an output.
  const files = [];
  const bodies = [];
  // The objects go away however the run ends (a server that refuses a registration included).
  try {
    for (let c = 0; c < concurrency; c++) {
      const inKey = `/${base}-in${c}`;
      const outKey = `/${base}-out${c}`;
      fs.writeFileSync(`/dev/shm${inKey}`, input);
      fs.writeFileSync(`/dev/shm${outKey}`, Buffer.alloc(bytes));
      files.push(`/dev/shm${inKey}`, `/dev/shm${outKey}`);
      await post(`systemsharedmemory/region/in${c}/register`, { key: inKey, offset: 0, byte_size: bytes });
      await post(`systemsharedmemory/region/out${c}/register`, { key: outKey, offset: 0, byte_size: bytes });
      bodies.push(Buffer.from(JSON.stringify({
        inputs: [{ name: 'INPUT0', shape: [1, elems], datatype: 'FP32', parameters: { shared_memory_region: `in${c}`, shared_memory_byte_size: bytes } }],
        outputs: [{ name: 'OUTPUT0', parameters: { shared_memory_region: `out${c}`, shared_memory_byte_size: bytes } }],
      })));
    }
    const fds = files.map((p) => fs.openSync(p, 'r+'));
    const out = Buffer.alloc(bytes);
    const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
    const infer = (body) => new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: Number(port), path: '/v2/models/identity_fp32/infer', method: 'POST', agent,
        headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode} ${Buffer.concat(chunks)}`))));
      });
      req.on('error', reject);
      req.end(body);
    });
    const total = Number(totalArg);
    const latencies = [];
    // Warm-up: one request per region pair.
    await Promise.all(bodies.map((body) => infer(body)));
    let started = 0;
    const t0 = performance.now();
    await Promise.all(bodies.map(async (body, c) => {
      while (started < total) {
        started++;
        const t = performance.now();
        if (touch) fs.writeSync(fds[2 * c], input, 0, bytes, 0);
        await infer(body);
        if (touch) fs.readSync(fds[2 * c + 1], out, 0, bytes, 0);
        latencies.push(performance.now() - t);
      }
    }));
    const seconds = (performance.now() - t0) / 1000;
    // The check: each output region holds the input (identity).
    for (let c = 0; c < concurrency; c++) {
      fs.readSync(fds[2 * c + 1], out, 0, bytes, 0);
      if (!out.equals(input)) throw new Error(`output region ${c} does not hold the input`);
    }
    for (const fd of fds) fs.closeSync(fd);
    agent.destroy();
    latencies.sort((a, b) => a - b);
    const p50 = latencies[Math.floor(latencies.length / 2)];
    process.stdout.write(`${JSON.stringify({ gbps: (total * bytes * 2) / seconds / 1e9, p50, rps: total / seconds })}\n`);
  } finally {
    await post('systemsharedmemory/unregister').catch(() => undefined);
    for (const p of files) fs.rmSync(p, { force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

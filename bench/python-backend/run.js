#!/usr/bin/env node
'use strict';
// bench/python-backend: what the Python backend path costs, in one run against one Nereid server.
//   a. sequential JSON requests (1 in flight) to a python model and to the ONNX `simple` model doing
//      the same INT32 [1,16] sum/difference: p50/p99 of each and the latency the python path adds;
//   b. the same with 16 requests in flight: p50/p99 and throughput;
//   c. a 16 MB FP32 tensor (4M elements) through the python `identity` model, binary in and out:
//      GB/s of tensor payload (request + response bytes / time).
//   With a., the CPU time per sequential request of the server process and of its python stubs
//   (Linux /proc): less sensitive than latency to other work running on the machine.
// Usage: node bench/python-backend/run.js [sequential requests=2000]
// Uses the built server (dist/); runs `npm run build` first when it is missing.
// NEREID_MAIN=<path to main.js> runs another build of the server instead (node main.js, without bin/nereid).
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { ROOT, MAIN, BIN, freePort, waitFor, startScript, stop, fmt } = require('../lib/util');
const { treeCpuNs } = require('./cpu');
const { SUM_MODEL: PY_SUM_MODEL } = require('./models');

const SEQ = Number(process.argv[2] || 2000);
const CONCURRENCY = 16;
const CONC_TOTAL = SEQ * 4;
const BIG_ELEMS = 4 << 20; // 16 MiB of FP32
const BIG_ITERS = 20;
const TARGET_ADDED_US = 150;
const TARGET_GBPS = 1;

const PY_SUM_CONFIG = `# Same tensors as \`simple\` (INT32 [16] x2 -> sum, difference), computed by a python model.
name: "py_simple"
backend: "python"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
instance_group [ { kind: KIND_CPU count: 1 } ]
`;

function makeRepo() {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-pybench-'));
  fs.cpSync(path.join(ROOT, 'models/simple'), path.join(repo, 'simple'), { recursive: true });
  fs.cpSync(path.join(ROOT, 'models/add_sub'), path.join(repo, 'add_sub'), { recursive: true });
  fs.cpSync(path.join(ROOT, 'test/fixtures/python/identity'), path.join(repo, 'identity'), { recursive: true });
  fs.mkdirSync(path.join(repo, 'py_simple/1'), { recursive: true });
  fs.writeFileSync(path.join(repo, 'py_simple/config.pbtxt'), PY_SUM_CONFIG);
  fs.writeFileSync(path.join(repo, 'py_simple/1/model.py'), PY_SUM_MODEL);
  return repo;
}

function ensureBuilt(main) {
  if (fs.existsSync(main)) return;
  console.log('dist/ is missing: running npm run build');
  const r = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0 || !fs.existsSync(main)) throw new Error('npm run build failed');
}

async function startServer(main, repo) {
  const port = await freePort();
  const grpc = await freePort();
  const metrics = await freePort();
  const args = ['serve', '--model-repository', repo, '--http-port', String(port),
    '--grpc-port', String(grpc), '--metrics-port', String(metrics), '--http-address', '127.0.0.1',
    '--grpc-address', '127.0.0.1', '--log-info=false'];
  // This checkout's build starts as users start it (bin/nereid); another build's main.js directly.
  const child = main === MAIN
    ? spawn(BIN, args, { stdio: ['ignore', 'inherit', 'inherit'] })
    : spawn(process.execPath, [main, ...args], { stdio: ['ignore', 'inherit', 'inherit'] });
  await waitFor(`http://127.0.0.1:${port}/v2/health/ready`, 60000);
  return { port, pid: child.pid, stop: () => stop(child) };
}

/** One POST; resolves with the response body (only its length when `countOnly`); rejects on non-200. */
function post(agent, port, urlPath, body, headers, countOnly = false) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: urlPath, method: 'POST', agent,
      headers: { ...headers, 'content-length': body.length } }, (res) => {
      const chunks = [];
      let length = 0;
      res.on('data', (c) => {
        length += c.length;
        if (!countOnly || res.statusCode !== 200) chunks.push(c);
      });
      res.on('end', () => {
        const out = Buffer.concat(chunks);
        if (res.statusCode === 200) resolve({ body: out, length, headers: res.headers });
        else reject(new Error(`HTTP ${res.statusCode} from ${urlPath}: ${out.toString().slice(0, 300)}`));
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

function sumBody() {
  const a = Array.from({ length: 16 }, (_, i) => i);
  const b = Array.from({ length: 16 }, (_, i) => 2 * i + 1);
  return Buffer.from(JSON.stringify({
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: a },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: b },
    ],
  }));
}

function checkSums(resBody) {
  const json = JSON.parse(resBody.toString());
  const sum = json.outputs.find((o) => o.name === 'OUTPUT0').data;
  for (let i = 0; i < 16; i++) if (sum[i] !== 3 * i + 1) throw new Error(`wrong sum at ${i}: ${sum[i]}`);
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

/** `total` requests with `concurrency` in flight over keep-alive connections; latencies in µs. */
async function measure(port, urlPath, body, headers, concurrency, total, warmup) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  try {
    let warm = 0;
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (warm++ < warmup) await post(agent, port, urlPath, body, headers);
    }));
    const latencies = new Float64Array(total);
    let next = 0;
    const t0 = process.hrtime.bigint();
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next++;
        const t = process.hrtime.bigint();
        await post(agent, port, urlPath, body, headers);
        latencies[i] = Number(process.hrtime.bigint() - t) / 1000;
      }
    }));
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    latencies.sort();
    return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), rps: total / seconds };
  } finally {
    agent.destroy();
  }
}

function bigRequest() {
  const data = Buffer.alloc(BIG_ELEMS * 4);
  const f = new Float32Array(data.buffer, data.byteOffset, BIG_ELEMS);
  for (let i = 0; i < BIG_ELEMS; i++) f[i] = i % 1000;
  const header = Buffer.from(JSON.stringify({
    inputs: [{ name: 'INPUT0', shape: [BIG_ELEMS], datatype: 'FP32', parameters: { binary_data_size: data.length } }],
    outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
    parameters: { binary_data_output: true },
  }));
  return { body: Buffer.concat([header, data]), headerLength: header.length, payload: data };
}

/** Sequential large binary requests; GB/s of tensor payload (in + out). `check` verifies one answer. */
async function measureBig(port, urlPath, big, check) {
  const headers = { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(big.headerLength) };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    check(await post(agent, port, urlPath, big.body, headers));
    await post(agent, port, urlPath, big.body, headers, true);
    const latencies = [];
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < BIG_ITERS; i++) {
      const t = process.hrtime.bigint();
      const r = await post(agent, port, urlPath, big.body, headers, true);
      if (r.length < big.payload.length) throw new Error('short output');
      latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    latencies.sort((a, b) => a - b);
    return { gbps: (BIG_ITERS * big.payload.length * 2) / seconds / 1e9, p50ms: percentile(latencies, 50) };
  } finally {
    agent.destroy();
  }
}

function checkIdentity(big) {
  return (r) => {
    const out = r.body.subarray(Number(r.headers['inference-header-content-length']));
    if (!out.equals(big.payload)) throw new Error('identity returned different bytes');
  };
}

function row(label, r) {
  return `${label.padEnd(34)} p50 ${fmt(r.p50).padStart(6)} µs   p99 ${fmt(r.p99).padStart(6)} µs   ${fmt(r.rps).padStart(6)} req/s`;
}

async function main() {
  const main = process.env.NEREID_MAIN ? path.resolve(process.env.NEREID_MAIN) : MAIN;
  ensureBuilt(main);
  console.log(`bench/python-backend: ${os.cpus().length} cpus, node ${process.version}, ${SEQ} sequential / ` +
    `${CONC_TOTAL} concurrent (${CONCURRENCY} in flight) requests, JSON, keep-alive, loopback`);
  const repo = makeRepo();
  const server = await startServer(main, repo);
  try {
    const body = sumBody();
    const json = { 'content-type': 'application/json' };
    checkSums((await post(undefined, server.port, '/v2/models/simple/infer', body, json)).body);
    checkSums((await post(undefined, server.port, '/v2/models/py_simple/infer', body, json)).body);
    const results = {};
    for (const [label, conc, total] of [['sequential', 1, SEQ], ['concurrent', CONCURRENCY, CONC_TOTAL]]) {
      // Interleave the two models twice and keep the better run of each, to damp noise from other load.
      const runs = { onnx: [], python: [] };
      const cpu = { onnx: [], python: [] };
      const measureCpu = async (kind, urlPath) => {
        const before = treeCpuNs(server.pid);
        runs[kind].push(await measure(server.port, urlPath, body, json, conc, total, 200));
        const after = treeCpuNs(server.pid);
        cpu[kind].push({ server: (after.self - before.self) / 1000 / (total + 200), stubs: (after.children - before.children) / 1000 / (total + 200) });
      };
      for (let round = 0; round < 2; round++) {
        await measureCpu('onnx', '/v2/models/simple/infer');
        await measureCpu('python', '/v2/models/py_simple/infer');
      }
      const best = (rs) => rs.reduce((a, b) => (b.p50 < a.p50 ? b : a));
      const least = (cs) => cs.reduce((a, b) => (b.server + b.stubs < a.server + a.stubs ? b : a));
      results[label] = { onnx: best(runs.onnx), python: best(runs.python), cpu: { onnx: least(cpu.onnx), python: least(cpu.python) } };
    }
    const bigReq = bigRequest();
    const big = await measureBig(server.port, '/v2/models/identity/infer', bigReq, checkIdentity(bigReq));
    const echo = await startScript(path.join(ROOT, 'bench/http-infer/echo-server.js'));
    const ceiling = await measureBig(echo.port, '/', bigReq, (r) => {
      if (r.body.length !== bigReq.body.length) throw new Error('echo returned a different length');
    }).finally(() => echo.stop());

    console.log('\nINT32 [1,16] sum + difference, JSON in/out (best of 2 interleaved runs)');
    for (const label of ['sequential', 'concurrent']) {
      const { onnx, python } = results[label];
      console.log(row(`${label} onnx   (simple)`, onnx));
      console.log(row(`${label} python (py_simple)`, python));
    }
    const c = results.sequential.cpu;
    console.log(`\nCPU per sequential request (the lower of 2 runs): onnx: server ${fmt(c.onnx.server)} µs; ` +
      `python: server ${fmt(c.python.server)} µs + stub ${fmt(c.python.stubs)} µs`);
    const added = results.sequential.python.p50 - results.sequential.onnx.p50;
    const addedConc = results.concurrent.python.p50 - results.concurrent.onnx.p50;
    console.log('\nsummary');
    console.log(`  added by python path, sequential p50   ${fmt(added).padStart(6)} µs   (target <= ${TARGET_ADDED_US} µs) ${added <= TARGET_ADDED_US ? 'OK' : 'MISSED'}`);
    console.log(`  added by python path, sequential p99   ${fmt(results.sequential.python.p99 - results.sequential.onnx.p99).padStart(6)} µs`);
    console.log(`  added by python path, concurrent p50   ${fmt(addedConc).padStart(6)} µs`);
    console.log(`  concurrent throughput python / onnx    ${fmt(results.concurrent.python.rps / results.concurrent.onnx.rps, 2).padStart(6)}x`);
    console.log(`  identity 16 MiB FP32, binary in/out    ${fmt(big.gbps, 2).padStart(6)} GB/s (in+out payload; p50 ${fmt(big.p50ms, 1)} ms)` +
      `   (target >= ${TARGET_GBPS} GB/s) ${big.gbps >= TARGET_GBPS ? 'OK' : 'MISSED'}`);
    console.log(`  same bytes through a node:http echo     ${fmt(ceiling.gbps, 2).padStart(6)} GB/s (transport ceiling of this machine; p50 ${fmt(ceiling.p50ms, 1)} ms)`);
  } finally {
    await server.stop();
    fs.rmSync(repo, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

#!/usr/bin/env node
'use strict';
// The ceiling of bench/dynamic-batching's ratio for any Node server on this machine: a bare
// node:http server with the bundled mlp in one onnxruntime session on a worker thread (the instance
// kind Nereid picks for it, same session options: no spinning), no Nereid code, driven by the same
// client (closed-loop.js, 32 connections, one FP32 [1,512] binary row per request), in two modes,
// alternating in one run:
//   unbatched: one row per session run; a second request is handed to the thread while one runs
//              (as Nereid's default scheduler lets an instance prefetch);
//   batched:   every request queued while the thread runs goes into its next run, up to 64 rows
//              (no queue delay: the batch grows while the instance is busy, as Triton's does).
// The request is parsed only as far as needed (the row is the body's last 2048 bytes) and the
// answer is canned JSON header + the row's 2048 output bytes: the server's per-request work is
// node:http's plus the hand-off, the least any server with this model can do.
// Usage: node bench/dynamic-batching/floor-batching.js [seconds per round=8] [rounds=3]
const http = require('node:http');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { closedLoop } = require('./closed-loop');

const SECONDS = Number(process.argv[2] || 8);
const ROUNDS = Number(process.argv[3] || 3);
const WIDTH = 512;
const ROW = WIDTH * 4;
const MODEL = path.join(__dirname, '../../models/mlp/1/model.onnx');

const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const ort = require(workerData.ort);
let session;
ort.InferenceSession.create(workerData.model, { extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } } })
  .then((s) => { session = s; parentPort.postMessage({ ready: true }); });
parentPort.on('message', async ({ id, rows, n }) => {
  const out = await session.run({ INPUT: new ort.Tensor('float32', new Float32Array(rows), [n, ${WIDTH}]) });
  const data = out.OUTPUT.data;
  parentPort.postMessage({ id, data }, [data.buffer]);
});`;

const answerHeader = Buffer.from(JSON.stringify({
  model_name: 'mlp', model_version: '1',
  outputs: [{ name: 'OUTPUT', datatype: 'FP32', shape: [1, WIDTH], parameters: { binary_data_size: ROW } }],
}));

/** One server and session for the whole run (onnxruntime-node loads once per process); `mode.batched` switches between rounds. */
function startServer(mode) {
  const worker = new Worker(THREAD, { eval: true, workerData: { model: MODEL, ort: require.resolve('onnxruntime-node') } });
  const queue = [];
  /** Runs handed to the thread and not answered yet: at most 2 (one running, one prefetched) unbatched, 1 batched. */
  let inFlight = 0;
  let nextId = 0;
  const runs = new Map();
  const pump = () => {
    while (inFlight < (mode.batched ? 1 : 2) && queue.length > 0) {
      const take = mode.batched ? queue.splice(0, 64) : queue.splice(0, 1);
      const rows = new ArrayBuffer(take.length * ROW);
      const view = new Uint8Array(rows);
      take.forEach((r, i) => view.set(r.row, i * ROW));
      const id = ++nextId;
      runs.set(id, take);
      inFlight++;
      worker.postMessage({ id, rows, n: take.length }, [rows]);
    }
  };
  worker.on('message', (m) => {
    if (m.ready) return;
    const take = runs.get(m.id);
    runs.delete(m.id);
    inFlight--;
    pump();
    const bytes = Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength);
    take.forEach((r, i) => {
      r.res.writeHead(200, ['content-type', 'application/octet-stream', 'inference-header-content-length', String(answerHeader.length),
        'content-length', String(answerHeader.length + ROW)]);
      r.res.write(answerHeader);
      r.res.end(bytes.subarray(i * ROW, (i + 1) * ROW));
    });
  });
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      queue.push({ row: body.subarray(body.length - ROW), res });
      pump();
    });
  });
  return new Promise((resolve) => {
    worker.once('message', () => server.listen(0, '127.0.0.1', () => resolve({ port: server.address().port, close: async () => {
      server.close();
      server.closeAllConnections();
      await worker.terminate();
    } })));
  });
}

async function main() {
  const os = require('node:os');
  console.log(`bench/dynamic-batching/floor-batching: bare node:http + one onnxruntime session on a worker thread, mlp, 32 connections, ${SECONDS}s x ${ROUNDS} rounds per mode, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  const header = Buffer.from(JSON.stringify({
    inputs: [{ name: 'INPUT', shape: [1, WIDTH], datatype: 'FP32', parameters: { binary_data_size: ROW } }],
    outputs: [{ name: 'OUTPUT', parameters: { binary_data: true } }],
  }));
  const row = new Float32Array(WIDTH).map((_, i) => Math.sin(i) * 0.5);
  const body = Buffer.concat([header, Buffer.from(row.buffer)]);
  const totals = { unbatched: [], batched: [] };
  const state = { batched: false };
  const s = await startServer(state);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const mode of ['unbatched', 'batched']) {
      state.batched = mode === 'batched';
      const options = {
        port: s.port, path: '/v2/models/mlp/infer', body, connections: 32,
        headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) },
      };
      await closedLoop({ ...options, seconds: 2 });
      const r = await closedLoop({ ...options, seconds: SECONDS });
      totals[mode].push(r.rps);
      console.log(`round ${round} ${mode.padEnd(9)} ${Math.round(r.rps)} req/s   p50 ${r.p50.toFixed(2)} ms   p99 ${r.p99.toFixed(2)} ms   errors ${r.errors}`);
    }
  }
  await s.close();
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  console.log(`bare batched / bare unbatched: ${(mean(totals.batched) / mean(totals.unbatched)).toFixed(2)}x (means of the rounds); load average at the end ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

#!/usr/bin/env node
'use strict';
// bench/dynamic-batching: the bundled `mlp` model as shipped (dynamic batching) against the same
// model with its dynamic_batching block removed (every request runs alone), in one Nereid, in one
// run: 32 closed-loop clients over HTTP, each request one FP32 [1,512] row as a binary tensor with
// a binary output. Prints throughput, p50/p99 and the ratio of the two.
// Usage: node bench/dynamic-batching/run.js [seconds per round=10] [rounds=3] [client=raw|autocannon]
// (needs `npm run build` first). `raw` (the default): closed-loop.js, raw keep-alive sockets sending
// the pre-encoded request; `autocannon`: the load generator of the first figures. Both models are
// always measured with the same client in the same run.
const autocannon = require('autocannon');
const { closedLoop } = require('./closed-loop');
const { WIDTH, binaryRequest } = require('./mlp-wire');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ROOT, startNereid, fmt } = require('../lib/util');

const SECONDS = Number(process.argv[2] || 10);
const ROUNDS = Number(process.argv[3] || 3);
const CONNECTIONS = 32;
const CLIENT = process.argv[4] || 'raw';
if (CLIENT !== 'raw' && CLIENT !== 'autocannon') throw new Error(`client must be raw or autocannon, not ${CLIENT}`);

/** A copy of models/mlp named `name`, its dynamic_batching block removed unless `batching`. */
function copyMlp(repo, name, batching) {
  const dir = path.join(repo, name);
  fs.cpSync(path.join(ROOT, 'models/mlp'), dir, { recursive: true });
  let cfg = fs.readFileSync(path.join(dir, 'config.pbtxt'), 'utf8').replace('name: "mlp"', `name: "${name}"`);
  if (!batching) {
    const stripped = cfg.replace(/^dynamic_batching \{[^}]*\}\n/m, '');
    if (stripped === cfg) throw new Error('models/mlp/config.pbtxt: no dynamic_batching block found to remove');
    cfg = stripped;
  }
  fs.writeFileSync(path.join(dir, 'config.pbtxt'), cfg);
}

async function load(url, request, duration) {
  const headers = { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(request.headerLength) };
  if (CLIENT === 'raw') {
    const u = new URL(url);
    const r = await closedLoop({ port: Number(u.port), path: u.pathname, body: request.body, headers, connections: CONNECTIONS, seconds: duration });
    if (r.firstError) console.error(r.firstError.message);
    // The shape of autocannon's result that summary() reads.
    return { requests: { average: r.rps }, latency: { p50: r.p50, p99: r.p99 }, errors: r.errors, non2xx: 0 };
  }
  return new Promise((resolve, reject) => {
    autocannon({
      url,
      method: 'POST',
      body: request.body,
      headers,
      connections: CONNECTIONS,
      duration,
    }, (err, r) => (err ? reject(err) : resolve(r)));
  });
}

function summary(name, r) {
  const errors = r.errors + r.non2xx;
  console.log(`${name.padEnd(12)} ${fmt(r.requests.average).padStart(7)} req/s   p50 ${fmt(r.latency.p50, 2)} ms   p99 ${fmt(r.latency.p99, 2)} ms   errors ${errors}`);
  if (errors > 0) throw new Error(`${name}: ${errors} failed requests`);
  return r;
}

/** Batches and requests the model has executed so far (its statistics). */
async function executions(port, model) {
  const s = (await (await fetch(`http://127.0.0.1:${port}/v2/models/${model}/stats`)).json()).model_stats[0];
  return { executions: Number(s.execution_count), inferences: Number(s.inference_count) };
}

async function main() {
  console.log(`bench/dynamic-batching: mlp FP32 [1,${WIDTH}] binary over HTTP, ${CONNECTIONS} connections (${CLIENT} client), ${SECONDS}s per run, ` +
    `${os.cpus().length} cpus, node ${process.version}`);
  const shipped = fs.readFileSync(path.join(ROOT, 'models/mlp/config.pbtxt'), 'utf8');
  console.log(`shipped mlp: ${/dynamic_batching \{[^}]*\}/.exec(shipped)?.[0].replace(/\s+/g, ' ')}; ` +
    `${/instance_group \[[^\]]*\]/.exec(shipped)?.[0].replace(/\s+/g, ' ')}`);
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-'));
  copyMlp(repo, 'mlp', true);
  copyMlp(repo, 'mlp_unbatched', false);
  const nereid = await startNereid(repo);
  try {
    const request = binaryRequest();
    const url = (name) => `http://127.0.0.1:${nereid.http}/v2/models/${name}/infer`;
    await load(url('mlp'), request, 2);
    await load(url('mlp_unbatched'), request, 2);
    // Alternate the two for ROUNDS rounds: the machine's background load moves from second to
    // second, and a single back-to-back pair can land on either side of it.
    const totals = { batched: { rps: 0, p99: [] }, unbatched: { rps: 0, p99: [] } };
    for (let round = 1; round <= ROUNDS; round++) {
      const u = summary(`unbatched ${round}`, await load(url('mlp_unbatched'), request, SECONDS));
      const before = await executions(nereid.http, 'mlp');
      const b = summary(`batched ${round}`, await load(url('mlp'), request, SECONDS));
      const after = await executions(nereid.http, 'mlp');
      const runs = after.executions - before.executions;
      console.log(`             mean batch ${fmt((after.inferences - before.inferences) / Math.max(1, runs), 1)} over ${runs} executions`);
      totals.unbatched.rps += u.requests.average;
      totals.unbatched.p99.push(u.latency.p99);
      totals.batched.rps += b.requests.average;
      totals.batched.p99.push(b.latency.p99);
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const p99b = median(totals.batched.p99);
    const p99u = median(totals.unbatched.p99);
    console.log(`mean       unbatched ${fmt(totals.unbatched.rps / ROUNDS)} req/s   batched ${fmt(totals.batched.rps / ROUNDS)} req/s`);
    console.log(`ratio batched/unbatched throughput: ${fmt(totals.batched.rps / totals.unbatched.rps, 2)}x (target >= 3x)`);
    console.log(`median p99: unbatched ${fmt(p99u, 2)} ms   batched ${fmt(p99b, 2)} ms   (target: batched no worse)`);
  } finally {
    await nereid.stop();
    fs.rmSync(repo, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

#!/usr/bin/env node
'use strict';
// bench/http-infer: the same load against Nereid and against a minimal node:http + onnxruntime-node
// server, in one run. Prints throughput, p50/p99 and the ratio. Then a binary-extension run with a
// 1M-element FP32 tensor through an identity model, reporting GB/s of tensor payload in and out,
// next to a do-nothing node:http echo server (the transport ceiling of this machine) in the same run.
// Usage: node bench/http-infer/run.js [seconds per round=10] [rounds=3]   (needs `npm run build` first)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ROOT, startNereid, startScript, simpleBody, postLoad, fmt } = require('../lib/util');
const { spawnSync } = require('node:child_process');

const SECONDS = Number(process.argv[2] || 10);
const ROUNDS = Number(process.argv[3] || 3);
const CONNECTIONS = 16;

function load(url, body, headers = {}, connections = CONNECTIONS, duration = SECONDS) {
  return postLoad(url, body, { connections, duration, headers });
}

/** The large-tensor client in a fresh node process (60 requests, `conc` in flight). */
function bigRun(port, urlPath, conc, kind) {
  const r = spawnSync(process.execPath, [path.join(__dirname, 'big-tensor.js'), String(port), urlPath, String(1 << 20), String(conc), '60', kind],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) throw new Error(`big-tensor client failed (${r.status})`);
  return JSON.parse(r.stdout);
}

function summary(name, r) {
  const errors = r.errors + r.non2xx;
  console.log(`${name.padEnd(11)} ${fmt(r.requests.average).padStart(7)} req/s   p50 ${fmt(r.latency.p50, 2)} ms   p99 ${fmt(r.latency.p99, 2)} ms   errors ${errors}`);
  return r.requests.average;
}

async function main() {
  console.log(`bench/http-infer: ${CONNECTIONS} connections, ${SECONDS}s per run, ${os.cpus().length} cpus, node ${process.version}`);
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-'));
  fs.cpSync(path.join(ROOT, 'models/simple'), path.join(repo, 'simple'), { recursive: true });
  // The same model with onnxruntime's default session options (what the bare baseline gets when it
  // passes none): a spinning intra-op pool of one thread per core.
  const ortDefaults = path.join(repo, 'simple_ort_defaults');
  fs.cpSync(path.join(ROOT, 'models/simple'), ortDefaults, { recursive: true });
  const cfg = fs.readFileSync(path.join(ortDefaults, 'config.pbtxt'), 'utf8').replace('name: "simple"', 'name: "simple_ort_defaults"');
  fs.writeFileSync(path.join(ortDefaults, 'config.pbtxt'), `${cfg}
parameters { key: "allow_spinning" value: { string_value: "1" } }
parameters { key: "intra_op_thread_count" value: { string_value: "${os.cpus().length}" } }
`);
  fs.cpSync(path.join(ROOT, 'test/fixtures/onnx/identity_fp32'), path.join(repo, 'identity_fp32'), { recursive: true });
  const nereid = await startNereid(repo);
  const model = path.join(ROOT, 'models/simple/1/model.onnx');
  const baseline = await startScript(path.join(__dirname, 'baseline-server.js'), [model]);
  const baselineNereidOpts = await startScript(path.join(__dirname, 'baseline-server.js'), [model, '--nereid-session-options']);
  try {
    const body = simpleBody();
    const url = (port, name) => `http://127.0.0.1:${port}/v2/models/${name}/infer`;
    // Two pairs, each with the same onnxruntime session options on both sides, so that the ratio
    // measures the servers and not the thread-pool settings (which move the result by ~20 % here).
    const pairs = [
      ['onnxruntime defaults (spinning pool) on both sides', url(baseline.port, 'simple'), url(nereid.http, 'simple_ort_defaults')],
      ["Nereid's defaults (1 thread, no spinning) on both sides", url(baselineNereidOpts.port, 'simple'), url(nereid.http, 'simple')],
    ];
    for (const [label, bUrl, nUrl] of pairs) {
      await load(nUrl, body, {}, CONNECTIONS, 2);
      await load(bUrl, body, {}, CONNECTIONS, 2);
      // Alternate the two servers for ROUNDS rounds and add them up: the machine's background load
      // moves from second to second, and a single back-to-back pair can land on either side of it.
      console.log(`\nsimple, JSON tensors, ${label} (${ROUNDS} alternating rounds of ${SECONDS}s each)`);
      const totals = { baseline: 0, nereid: 0 };
      for (let round = 1; round <= ROUNDS; round++) {
        totals.baseline += summary(`baseline ${round}`, await load(bUrl, body));
        totals.nereid += summary(`nereid ${round}`, await load(nUrl, body));
      }
      console.log(`mean       baseline ${fmt(totals.baseline / ROUNDS)} req/s   nereid ${fmt(totals.nereid / ROUNDS)} req/s`);
      console.log(`ratio nereid/baseline throughput: ${fmt(totals.nereid / totals.baseline, 2)}x (target >= 0.8x)`);
    }

    console.log('\nidentity_fp32, 1M-element FP32 tensor (4 MiB), binary in and out, keep-alive raw-socket client (fresh process, see big-tensor.js)');
    const echo = await startScript(path.join(__dirname, 'echo-server.js'));
    try {
      for (const conc of [1, 4]) {
        const e = bigRun(echo.port, '/', conc, 'raw');
        const n = bigRun(nereid.http, '/v2/models/identity_fp32/infer', conc, 'binary');
        console.log(`concurrency ${conc}: echo ceiling ${fmt(e.gbps, 2)} GB/s   nereid ${fmt(n.gbps, 2)} GB/s (p50 ${fmt(n.p50, 1)} ms)   ` +
          `ratio ${fmt(n.gbps / e.gbps, 2)}x   (target >= 1 GB/s)`);
      }
    } finally {
      await echo.stop();
    }
    console.log(`\nnereid ready in ${nereid.readyMs} ms`);
  } finally {
    await nereid.stop();
    await baseline.stop();
    await baselineNereidOpts.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

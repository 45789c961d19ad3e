#!/usr/bin/env node
'use strict';
// bench/metrics-overhead/trace.js: what tracing costs. The same `simple` load (JSON tensors,
// autocannon) against Nereid with tracing off (level OFF: one test per request) and with Triton-mode
// tracing at TIMESTAMPS, rate 1000 (the case: every 1000th request traced, files written
// every 10 traces) and, for scale, rate 1 (every request traced), in one run, rounds alternating so
// that the machine's background load falls on every case alike; a second tracing-off server is the
// control (the difference between two identical servers is the noise floor). Metrics stay at their defaults in
// every case. Prints req/s per case and each case's cost against 'off'; target at rate 1000: <= 5 %.
// Usage: node bench/metrics-overhead/trace.js [seconds per round=3] [rounds=10]   (needs `npm run build` first)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ROOT, startNereid, simpleBody, postLoad, fmt } = require('../lib/util');

const SECONDS = Number(process.argv[2] || 3);
const ROUNDS = Number(process.argv[3] || 10);
const CONNECTIONS = 16;

function traceArgs(dir, name, rate) {
  return ['--trace-config', 'level=TIMESTAMPS', '--trace-config', `rate=${rate}`,
    '--trace-config', `triton,file=${path.join(dir, name)}`, '--trace-config', 'triton,log-frequency=10'];
}

function load(url, body, duration) {
  return postLoad(url, body, { connections: CONNECTIONS, duration });
}

/** Traces written to `<dir>/<name>.<n>` files. */
function tracesIn(dir, name) {
  let n = 0;
  for (const f of fs.readdirSync(dir)) {
    if (!f.startsWith(`${name}.`)) continue;
    n += JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')).filter((r) => r.model_name !== undefined).length;
  }
  return n;
}

async function main() {
  console.log(`bench/metrics-overhead/trace.js: ${CONNECTIONS} connections, ${SECONDS}s x ${ROUNDS} rounds per case, ${os.cpus().length} cpus, node ${process.version}`);
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-'));
  const traces = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-traces-'));
  fs.cpSync(path.join(ROOT, 'models/simple'), path.join(repo, 'simple'), { recursive: true });
  const CASES = [
    { name: 'tracing off', args: [] },
    // The same as the baseline in a second process: how far two identical servers differ on this machine.
    { name: 'off (control)', args: [] },
    { name: 'trace rate=1000', args: traceArgs(traces, 'r1000.json', 1000), file: 'r1000.json' },
    { name: 'trace rate=1', args: traceArgs(traces, 'r1.json', 1), file: 'r1.json' },
  ];
  const servers = [];
  try {
    for (const c of CASES) servers.push(await startNereid(repo, c.args));
    const body = simpleBody();
    const totals = CASES.map(() => ({ requests: 0, seconds: 0, errors: 0, p99: [] }));
    for (let i = 0; i < CASES.length; i++) await load(`http://127.0.0.1:${servers[i].http}/v2/models/simple/infer`, body, 2);
    for (let round = 0; round < ROUNDS; round++) {
      // Rotate the order each round: no case always runs first (or last) in a round.
      for (let k = 0; k < CASES.length; k++) {
        const i = (k + round) % CASES.length;
        const r = await load(`http://127.0.0.1:${servers[i].http}/v2/models/simple/infer`, body, SECONDS);
        totals[i].requests += r.requests.total;
        totals[i].seconds += r.duration;
        totals[i].errors += r.errors + r.non2xx;
        totals[i].p99.push(r.latency.p99);
      }
    }
    await Promise.all(servers.map((s) => s.stop()));
    const rate = totals.map((t) => t.requests / t.seconds);
    for (let i = 0; i < CASES.length; i++) {
      const t = totals[i];
      const cost = i === 0 ? '' : `   cost ${fmt((1 - rate[i] / rate[0]) * 100, 1)} % (ratio ${fmt(rate[i] / rate[0], 3)})`;
      const p99 = t.p99.sort((a, b) => a - b)[Math.floor(t.p99.length / 2)];
      const written = CASES[i].file ? `   traces written ${tracesIn(traces, CASES[i].file)}` : '';
      console.log(`${CASES[i].name.padEnd(18)} ${fmt(rate[i]).padStart(7)} req/s   median p99 ${fmt(p99, 2)} ms   errors ${t.errors}${written}${cost}`);
    }
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    fs.rmSync(repo, { recursive: true, force: true });
    fs.rmSync(traces, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

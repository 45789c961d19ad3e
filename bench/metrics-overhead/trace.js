#!/usr/bin/env node
'use strict';
// bench/metrics-overhead/trace.js: what tracing costs. The same `simple` load (JSON tensors,
// autocannon) against Nereid with tracing off (level OFF: one test per request) and with Triton-mode
// tracing at TIMESTAMPS, rate 1000 (the issue's case: every 1000th request traced, files written
// every 10 traces) and, for scale, rate 1 (every request traced), in one run; a second tracing-off
// server is the control (the difference between two identical servers is the noise floor). Metrics
// stay at their defaults in every case. The design is run.js's (rounds.js): fresh servers each
// round, started, warmed (WARMUP_S each) and measured in an order rotated each round, and the
// server CPU time per request as the primary figure; each traced server writes its own trace files
// (`<case>-<round>.json.<n>`), counted at the end (warm-up requests are traced too). Prints CPU
// time per request, req/s and each case's cost against 'off'; target at rate 1000: <= 5 %.
// Usage: node bench/metrics-overhead/trace.js [seconds per round=3] [rounds=8] [--start-once]
//   --start-once: servers started once, in case order (the design this bench had before)
//   (needs `npm run build` first)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ROOT, simpleBody } = require('../lib/util');
const { header, measureRounds, report } = require('./rounds');

const ARGS = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const FLAGS = new Set(process.argv.slice(2).filter((a) => a.startsWith('--')));
const SECONDS = Number(ARGS[0] || 3);
/** A multiple of the four cases, so that each takes each start position equally often. */
const ROUNDS = Number(ARGS[1] || 8);

/** Flags of a server tracing 1 request in `rate` into `<dir>/<prefix>-<round>.json` (a new file every 10 traces). */
function traceArgs(dir, prefix, rate) {
  return (round) => [
    '--trace-config', 'level=TIMESTAMPS', '--trace-config', `rate=${rate}`,
    '--trace-config', `triton,file=${path.join(dir, `${prefix}-${round}.json`)}`, '--trace-config', 'triton,log-frequency=10',
  ];
}

/** Traces written to the `<dir>/<prefix>-<round>.json.<n>` files. */
function tracesIn(dir, prefix) {
  let n = 0;
  for (const f of fs.readdirSync(dir)) {
    if (!f.startsWith(`${prefix}-`)) continue;
    n += JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')).filter((r) => r.model_name !== undefined).length;
  }
  return n;
}

async function main() {
  const startOnce = FLAGS.has('--start-once');
  console.log(header('bench/metrics-overhead/trace.js', { seconds: SECONDS, rounds: ROUNDS, startOnce }));
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-'));
  const traces = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-traces-'));
  fs.cpSync(path.join(ROOT, 'models/simple'), path.join(repo, 'simple'), { recursive: true });
  const cases = [
    { name: 'tracing off', args: [] },
    // The same as the baseline in a second process: how far two identical servers differ on this machine.
    { name: 'off (control)', args: [] },
    { name: 'trace rate=1000', args: traceArgs(traces, 'r1000', 1000), traces: 'r1000' },
    { name: 'trace rate=1', args: traceArgs(traces, 'r1', 1), traces: 'r1' },
  ];
  try {
    const totals = await measureRounds({ cases, repo, body: simpleBody(), seconds: SECONDS, rounds: ROUNDS, startOnce });
    report(cases, totals, (i) => (cases[i].traces ? `   traces written ${tracesIn(traces, cases[i].traces)}` : ''));
    console.log(`load average at the end: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  } finally {
    fs.rmSync(repo, { recursive: true, force: true });
    fs.rmSync(traces, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

#!/usr/bin/env node
'use strict';
// bench/metrics-overhead: what metrics cost. The same `simple` load (JSON tensors, autocannon)
// against Nereid with everything off (--allow-metrics=false: no families, no histograms, no
// observers) and with metrics on (Triton's families, Nereid's histograms on by default, the
// first-response histogram, and summaries in a third case), each scraped once a second while
// loaded, in one run, rounds alternating so that the machine's background load falls on every case
// alike. The statistics extension is recorded in every case (it cannot be turned off, as in Triton).
// Prints req/s per case and each case's cost against the baseline ('off'); target: cost <= 5 %.
// Also the server's CPU time per request (utime + stime of its process over its load windows, from
// /proc), and the metrics' own work per request measured alone: the observer calls a request makes
// (histograms and summaries, through the built libs/metrics) timed in this process, as a share of
// the 'off' server's CPU time per request. On a busy shared machine the noise between the two
// identical servers can exceed the cost; the measured-alone share does not depend on that noise.
// A second 'off' server (the control) shows how much two identical servers differ in the same run:
// on a busy machine that noise can be larger than the cost measured.
// Rounds: fresh servers each round, started, warmed and measured in an order rotated each round
// (rounds.js, shared with trace.js); the server CPU time per request is the primary figure.
// Usage: node bench/metrics-overhead/run.js [seconds per round=3] [rounds=8] [--identical] [--start-once]
//   --identical: four identical 'off' servers (shows the spread that start order and noise alone give)
//   --start-once: the earlier design (servers started once, in case order) for comparison
//   --scrape-check: off, metrics scraped once a second, the same metrics never scraped, off again
//   --observer-check: off, metrics with no per-request family (nereid_histograms=false), metrics with
//     the histograms, off again; none scraped
//   (needs `npm run build` first)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ROOT, simpleBody, fmt } = require('../lib/util');
const { header, measureRounds, report } = require('./rounds');

const ARGS = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const FLAGS = new Set(process.argv.slice(2).filter((a) => a.startsWith('--')));
const SECONDS = Number(ARGS[0] || 3);
const ROUNDS = Number(ARGS[1] || 8);
/**
 * The cases, the first one the baseline. Each is a Nereid started with `args`; `scrape` fetches
 * /metrics once a second while it is loaded. More cases (tracing at trace_rate=1000, say) are
 * added here: `{ name, args, scrape }`.
 */
const CASES = [
  { name: 'off', args: ['--allow-metrics=false'], scrape: false },
  { name: 'metrics+histograms', args: ['--metrics-config', 'histogram_latencies=true'], scrape: true },
  { name: '+summaries', args: ['--metrics-config', 'histogram_latencies=true', '--metrics-config', 'summary_latencies=true'], scrape: true },
  // The baseline again: how far two identical servers drift apart in this run (the noise floor).
  { name: 'off (control)', args: ['--allow-metrics=false'], scrape: false },
];
const IDENTICAL = [1, 2, 3, 4].map((n) => ({ name: `off #${n}`, args: ['--allow-metrics=false'], scrape: false }));
/** Whether the scrapes, not the metrics kept per request, make the difference: the same metrics server scraped and not. */
const SCRAPE_CHECK = [
  CASES[0],
  { name: 'metrics, scraped', args: CASES[1].args, scrape: true },
  { name: 'metrics, no scrape', args: CASES[1].args, scrape: false },
  CASES[3],
];
/** Whether the per-request families or the metrics service itself make the difference (none scraped). */
const OBSERVER_CHECK = [
  CASES[0],
  { name: 'metrics, no families', args: ['--metrics-config', 'nereid_histograms=false'], scrape: false },
  { name: 'metrics, no scrape', args: CASES[1].args, scrape: false },
  CASES[3],
];

/** ns of metrics work per request: the calls a successful request makes on its model's observer. */
function observerNsPerRequest(config) {
  const { NereidMetrics, parseMetricsConfig } = require(path.join(ROOT, 'dist/libs/metrics/src'));
  const metrics = new NereidMetrics({ settings: parseMetricsConfig(config), cpu: false, intervalMs: 2000 });
  const observer = metrics.observerFor('simple', 1);
  const compute = { inputNs: 20e3, inferNs: 150e3, outputNs: 30e3 };
  const N = 1e6;
  const run = () => {
    for (let i = 0; i < N; i++) {
      observer.firstResponse(400e3 + (i % 100) * 1e3);
      observer.success(400e3 + (i % 100) * 1e3, 1);
      observer.execution(50e3 + (i % 50) * 1e3, compute);
      observer.batch(1);
    }
  };
  run(); // warm-up
  const t = process.hrtime.bigint();
  run();
  return Number(process.hrtime.bigint() - t) / N;
}

async function main() {
  const cases = FLAGS.has('--identical') ? IDENTICAL : FLAGS.has('--scrape-check') ? SCRAPE_CHECK : FLAGS.has('--observer-check') ? OBSERVER_CHECK : CASES;
  const startOnce = FLAGS.has('--start-once');
  console.log(header('bench/metrics-overhead', { seconds: SECONDS, rounds: ROUNDS, startOnce }));
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-'));
  fs.cpSync(path.join(ROOT, 'models/simple'), path.join(repo, 'simple'), { recursive: true });
  try {
    const totals = await measureRounds({ cases, repo, body: simpleBody(), seconds: SECONDS, rounds: ROUNDS, startOnce });
    const { cpuPerRequest } = report(cases, totals);
    if (cases === CASES) {
      console.log("metrics work per request measured alone, as a share of the 'off' server's CPU time per request:");
      for (const [name, config] of [['metrics+histograms', ['histogram_latencies=true']], ['+summaries', ['histogram_latencies=true', 'summary_latencies=true']]]) {
        const ns = observerNsPerRequest(config);
        console.log(`${name.padEnd(20)} ${fmt(ns, 0).padStart(7)} ns   ${fmt((ns / 1000 / cpuPerRequest[0]) * 100, 2)} %`);
      }
    }
    console.log(`load average at the end: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  } finally {
    fs.rmSync(repo, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

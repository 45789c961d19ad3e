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
// Start order: runs that started the servers once, in case order, found the first server started
// the slowest (bench/RESULTS.md). So each round starts fresh servers, in an order rotated each
// round, warms each alike (WARMUP_S of load each, in the same order), measures them in that order
// and stops them: over a multiple of 4 rounds every case takes every start (and load) position
// equally often. The server CPU time per request is the primary figure (it depends least on
// which server the scheduler favoured); req/s follows.
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
const { ROOT, startNereid, simpleBody, postLoad, fmt } = require('../lib/util');

/** CPU time (user + system) the process has used so far, ms (Linux /proc). */
function cpuMs(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

const ARGS = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const FLAGS = new Set(process.argv.slice(2).filter((a) => a.startsWith('--')));
const SECONDS = Number(ARGS[0] || 3);
const ROUNDS = Number(ARGS[1] || 8);
const CONNECTIONS = 16;
/**
 * Seconds of load each fresh server gets before it is measured (env NEREID_BENCH_WARMUP_S, default
 * 8): with 2 s the metrics servers were still 14-17 % costlier per request than 'off' on a quiet
 * machine, with 8 s within 3 % (bench/RESULTS.md).
 */
const WARMUP_S = Number(process.env.NEREID_BENCH_WARMUP_S || 8);

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

function load(url, body, duration) {
  return postLoad(url, body, { connections: CONNECTIONS, duration });
}

/** Scrapes the metrics port once a second until stopped; returns the scrape count. */
function scraper(port) {
  let count = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const r = await fetch(`http://127.0.0.1:${port}/metrics`);
      if (r.status !== 200) throw new Error(`scrape answered ${r.status}`);
      await r.text();
      count++;
      await new Promise((res) => setTimeout(res, 1000));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    return count;
  };
}

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
  console.log(
    `bench/metrics-overhead: ${CONNECTIONS} connections, ${SECONDS}s x ${ROUNDS} rounds per case, ` +
      `${startOnce ? 'servers started once in case order' : `fresh servers each round, start order rotated, ${WARMUP_S}s warm-up each`}, ` +
      `${os.cpus().length} cpus, node ${process.version}, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`,
  );
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-'));
  fs.cpSync(path.join(ROOT, 'models/simple'), path.join(repo, 'simple'), { recursive: true });
  const body = simpleBody();
  let servers = [];
  const url = (i) => `http://127.0.0.1:${servers[i].http}/v2/models/simple/infer`;
  /** Starts every case's server in `order` (case indexes) and warms each alike, in that order. */
  const startAll = async (order) => {
    servers = new Array(cases.length);
    for (const i of order) servers[i] = await startNereid(repo, cases[i].args);
    for (const i of order) await load(url(i), body, WARMUP_S);
  };
  const stopAll = async () => {
    await Promise.all(servers.filter(Boolean).map((s) => s.stop()));
    servers = [];
  };
  // Per case: requests, seconds, errors, p99s, scrapes, CPU ms, and req/s by start position.
  const totals = cases.map(() => ({ requests: 0, seconds: 0, errors: 0, p99: [], scrapes: 0, cpu: 0, byPosition: cases.map(() => []) }));
  // Stopped early (Ctrl-C): the servers must not outlive the benchmark.
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => void stopAll().finally(() => process.exit(130)));
  try {
    if (startOnce) await startAll(cases.map((_, i) => i));
    for (let round = 0; round < ROUNDS; round++) {
      // Rotate the order each round: no case always starts (or runs) first or last.
      const order = cases.map((_, k) => (k + round) % cases.length);
      if (!startOnce) await startAll(order);
      for (let k = 0; k < order.length; k++) {
        const i = order[k];
        const stopScrape = cases[i].scrape ? scraper(servers[i].metrics) : undefined;
        const cpu0 = cpuMs(servers[i].child.pid);
        const r = await load(url(i), body, SECONDS);
        totals[i].cpu += cpuMs(servers[i].child.pid) - cpu0;
        if (stopScrape) totals[i].scrapes += await stopScrape();
        totals[i].requests += r.requests.total;
        totals[i].seconds += r.duration;
        totals[i].errors += r.errors + r.non2xx;
        totals[i].p99.push(r.latency.p99);
        // With servers started once the start position is the case's; otherwise it is k.
        totals[i].byPosition[startOnce ? i : k].push(r.requests.total / r.duration);
      }
      if (!startOnce) await stopAll();
    }
    const rate = totals.map((t) => t.requests / t.seconds);
    const cpuPerRequest = totals.map((t) => (t.cpu * 1000) / t.requests); // µs
    console.log('server CPU time per request (primary figure):');
    for (let i = 0; i < cases.length; i++) {
      const cost = i === 0 ? '' : `   cost ${fmt((cpuPerRequest[i] / cpuPerRequest[0] - 1) * 100, 1)} %`;
      console.log(`${cases[i].name.padEnd(20)} ${fmt(cpuPerRequest[i], 1).padStart(7)} µs${cost}`);
    }
    console.log('throughput:');
    for (let i = 0; i < cases.length; i++) {
      const t = totals[i];
      const cost = i === 0 ? '' : `   cost ${fmt((1 - rate[i] / rate[0]) * 100, 1)} % (ratio ${fmt(rate[i] / rate[0], 3)})`;
      const p99 = t.p99.sort((a, b) => a - b)[Math.floor(t.p99.length / 2)];
      console.log(`${cases[i].name.padEnd(20)} ${fmt(rate[i]).padStart(7)} req/s   median p99 ${fmt(p99, 2)} ms   errors ${t.errors}   scrapes ${t.scrapes}${cost}`);
    }
    // Mean req/s of the rounds by the start position of the server that served them (all cases together).
    const positions = cases.map((_, p) => totals.flatMap((t) => t.byPosition[p]));
    console.log(`req/s by start position (1st .. ${cases.length}th started): ${positions.map((v) => (v.length ? fmt(v.reduce((a, b) => a + b, 0) / v.length) : '-')).join(' / ')}`);
    if (cases === CASES) {
      console.log("metrics work per request measured alone, as a share of the 'off' server's CPU time per request:");
      for (const [name, config] of [['metrics+histograms', ['histogram_latencies=true']], ['+summaries', ['histogram_latencies=true', 'summary_latencies=true']]]) {
        const ns = observerNsPerRequest(config);
        console.log(`${name.padEnd(20)} ${fmt(ns, 0).padStart(7)} ns   ${fmt((ns / 1000 / cpuPerRequest[0]) * 100, 2)} %`);
      }
    }
    console.log(`load average at the end: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  } finally {
    await stopAll();
    fs.rmSync(repo, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

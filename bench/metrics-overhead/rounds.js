'use strict';
// The measuring design both metrics-overhead benches share (run.js: metrics; trace.js: tracing).
// The same `simple` load (JSON tensors, autocannon, CONNECTIONS connections) against one Nereid per
// case, in one run. Start order: runs that started the servers once, in case order, found the first
// server started the slowest (bench/RESULTS.md). So each round starts fresh servers, in an order
// rotated each round, warms each alike (WARMUP_S of load each, in the same order), measures them in
// that order and stops them: over a multiple of the case count of rounds every case takes every
// start (and load) position equally often. Per case: req/s, median p99, errors, and the server's
// CPU time per request (utime + stime of its process over its load windows, from /proc: the primary
// figure, the one that depends least on which server the machine's scheduler favoured).
const fs = require('node:fs');
const os = require('node:os');
const { startNereid, postLoad, fmt } = require('../lib/util');

const CONNECTIONS = 16;
/**
 * Seconds of load each fresh server gets before it is measured (env NEREID_BENCH_WARMUP_S, default
 * 8): with 2 s the metrics servers were still 14-17 % costlier per request than 'off' on a quiet
 * machine, with 8 s within 3 % (bench/RESULTS.md).
 */
const WARMUP_S = Number(process.env.NEREID_BENCH_WARMUP_S || 8);

/** CPU time (user + system) the process has used so far, ms (Linux /proc). */
function cpuMs(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

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

/** The first line of a run: the bench, its load and design, the machine. */
function header(bench, { seconds, rounds, startOnce = false }) {
  return (
    `${bench}: ${CONNECTIONS} connections, ${seconds}s x ${rounds} rounds per case, ` +
    `${startOnce ? 'servers started once in case order' : `fresh servers each round, start order rotated, ${WARMUP_S}s warm-up each`}, ` +
    `${os.cpus().length} cpus, node ${process.version}, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`
  );
}

/**
 * Measures `cases` (the first one the baseline) over `rounds` rounds of `seconds` each. A case:
 * `{ name, args, scrape }`: `args` the server's flags, or a function of the round giving them (a
 * trace file of its own per round, say); `scrape`: /metrics fetched once a second while loaded.
 * `startOnce`: the earlier design (servers started once, in case order) for comparison.
 * Returns per case { requests, seconds, errors, p99 (ms, per round), scrapes, cpu (ms),
 * byPosition (req/s of its rounds by the start position of its server) }.
 */
async function measureRounds({ cases, repo, body, seconds, rounds, startOnce = false }) {
  let servers = [];
  const url = (i) => `http://127.0.0.1:${servers[i].http}/v2/models/simple/infer`;
  const argsOf = (i, round) => (typeof cases[i].args === 'function' ? cases[i].args(round) : cases[i].args);
  /** Starts every case's server in `order` (case indexes) and warms each alike, in that order. */
  const startAll = async (order, round) => {
    servers = new Array(cases.length);
    for (const i of order) servers[i] = await startNereid(repo, argsOf(i, round));
    for (const i of order) await load(url(i), body, WARMUP_S);
  };
  const stopAll = async () => {
    await Promise.all(servers.filter(Boolean).map((s) => s.stop()));
    servers = [];
  };
  const totals = cases.map(() => ({ requests: 0, seconds: 0, errors: 0, p99: [], scrapes: 0, cpu: 0, byPosition: cases.map(() => []) }));
  // Stopped early (Ctrl-C): the servers must not outlive the benchmark.
  const interrupted = () => void stopAll().finally(() => process.exit(130));
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, interrupted);
  try {
    if (startOnce) await startAll(cases.map((_, i) => i), 0);
    for (let round = 0; round < rounds; round++) {
      // Rotate the order each round: no case always starts (or runs) first or last.
      const order = cases.map((_, k) => (k + round) % cases.length);
      if (!startOnce) await startAll(order, round);
      for (let k = 0; k < order.length; k++) {
        const i = order[k];
        const stopScrape = cases[i].scrape ? scraper(servers[i].metrics) : undefined;
        const cpu0 = cpuMs(servers[i].child.pid);
        const r = await load(url(i), body, seconds);
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
  } finally {
    await stopAll();
    for (const signal of ['SIGINT', 'SIGTERM']) process.off(signal, interrupted);
  }
  return totals;
}

/**
 * Prints the CPU time per request, the throughput (with `extra(i)` appended to case i's line) and
 * req/s by start position; returns { rate, cpuPerRequest } (req/s; µs of server CPU per request).
 */
function report(cases, totals, extra = () => '') {
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
    const scrapes = cases[i].scrape !== undefined ? `   scrapes ${t.scrapes}` : '';
    console.log(`${cases[i].name.padEnd(20)} ${fmt(rate[i]).padStart(7)} req/s   median p99 ${fmt(p99, 2)} ms   errors ${t.errors}${scrapes}${extra(i)}${cost}`);
  }
  // Mean req/s of the rounds by the start position of the server that served them (all cases together).
  const positions = cases.map((_, p) => totals.flatMap((t) => t.byPosition[p]));
  console.log(`req/s by start position (1st .. ${cases.length}th started): ${positions.map((v) => (v.length ? fmt(v.reduce((a, b) => a + b, 0) / v.length) : '-')).join(' / ')}`);
  return { rate, cpuPerRequest };
}

module.exports = { CONNECTIONS, WARMUP_S, cpuMs, load, scraper, header, measureRounds, report };

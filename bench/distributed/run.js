#!/usr/bin/env node
'use strict';
// bench/distributed, part 1: `simple` at 64 concurrent clients (autocannon, HTTP/JSON), the embedded
// server against the distributed roles over a private redis-server on loopback (1 gateway + 1
// scheduler + 1 worker, three processes), in one run. Prints throughput, p50/p99, the ratio
// distributed / embedded, the p50 the roles add, and the CPU each process spent per request
// (utime + stime from /proc/<pid>/stat over the measured seconds). Issue 13's targets: ratio >= 0.5,
// added p50 <= 1.5 ms. With `rounds` > 1 the two setups alternate and the medians are compared.
// Part 2 (scale.js): the scale-out runs, 1 gateway + 1 scheduler + N workers (N = 1, 2, 4).
// Usage: node bench/distributed/run.js [seconds per run=10] [rounds=1] [--no-scale | --scale-only]
//   (needs `npm run build` and redis-server)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ROOT, startNereid, simpleBody, postLoad, fmt } = require('../lib/util');
const { cpuMs, startRedis, stopAll } = require('./procs');

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const flags = new Set(process.argv.slice(2).filter((a) => a.startsWith('--')));
const SECONDS = Number(args[0] || 10);
const ROUNDS = Number(args[1] || 1);
const CONNECTIONS = 64;

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** Loads `port` for `duration` s; with `pids` ({name: pid}), also each process's CPU ms per request. */
async function load(port, duration, pids = {}) {
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMs(pid)]));
  const r = await postLoad(`http://127.0.0.1:${port}/v2/models/simple/infer`, simpleBody(), { connections: CONNECTIONS, duration });
  r.cpuPerRequestUs = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, ((cpuMs(pid) - before[k]) * 1000) / Math.max(1, r.requests.total)]));
  return r;
}

function summary(name, r) {
  const errors = r.errors + r.non2xx;
  const cpu = Object.entries(r.cpuPerRequestUs).map(([k, us]) => `${k} ${fmt(us)}`).join(', ');
  console.log(`${name.padEnd(12)} ${fmt(r.requests.average).padStart(7)} req/s   p50 ${fmt(r.latency.p50, 2)} ms   p99 ${fmt(r.latency.p99, 2)} ms   errors ${errors}   CPU us/request: ${cpu}`);
  return r;
}

async function embeddedRun(repo) {
  const server = await startNereid(repo, []);
  try {
    await load(server.http, 2); // warm-up
    return summary('embedded', await load(server.http, SECONDS, { nereid: server.child.pid }));
  } finally {
    await server.stop();
  }
}

async function distributedRun(repo) {
  const redis = await startRedis();
  const procs = [redis];
  try {
    const worker = await startNereid(repo, ['--role', 'worker', '--redis', redis.url]);
    procs.push(worker);
    const scheduler = await startNereid(repo, ['--role', 'scheduler', '--redis', redis.url]);
    procs.push(scheduler);
    const gateway = await startNereid(repo, ['--role', 'gateway', '--redis', redis.url]);
    procs.push(gateway);
    await load(gateway.http, 2); // warm-up
    const pids = { gateway: gateway.child.pid, scheduler: scheduler.child.pid, worker: worker.child.pid, redis: redis.child.pid };
    return summary('distributed', await load(gateway.http, SECONDS, pids));
  } finally {
    await stopAll(procs);
  }
}

async function main() {
  const loadavg = () => os.loadavg().map((l) => l.toFixed(1)).join(' ');
  console.log(`bench/distributed: simple, ${CONNECTIONS} connections, ${SECONDS}s per run, ${ROUNDS} round(s), ${os.cpus().length} cpus, load average ${loadavg()}, node ${process.version}`);
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-distributed-'));
  try {
    fs.cpSync(path.join(ROOT, 'models/simple'), path.join(repo, 'simple'), { recursive: true });
    if (!flags.has('--scale-only')) {
      const e = [];
      const d = [];
      for (let i = 0; i < ROUNDS; i++) {
        e.push(await embeddedRun(repo));
        d.push(await distributedRun(repo));
      }
      const tput = (rs) => median(rs.map((r) => r.requests.average));
      const p50 = (rs) => median(rs.map((r) => r.latency.p50));
      const ratio = tput(d) / tput(e);
      const added = p50(d) - p50(e);
      if (ROUNDS > 1) console.log(`medians: embedded ${fmt(tput(e))} req/s p50 ${fmt(p50(e), 2)} ms, distributed ${fmt(tput(d))} req/s p50 ${fmt(p50(d), 2)} ms`);
      console.log(`ratio distributed / embedded: ${ratio.toFixed(2)}x (target >= 0.5x)`);
      console.log(`added p50: ${added.toFixed(2)} ms (target <= 1.5 ms)`);
      console.log(`load average at the end: ${loadavg()}`);
    }
  } finally {
    fs.rmSync(repo, { recursive: true, force: true });
  }
  if (!flags.has('--no-scale')) await require('./scale').main({ seconds: SECONDS });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

#!/usr/bin/env node
'use strict';
// bench/distributed, the gateway's share: the CPU one gateway process spends per request, for two
// builds of Nereid, against the same scheduler + worker (of build B) + redis-server, the two
// gateways started in turn (A, B, A, B, ...) so that both see the same minutes of the machine.
// `simple` at 64 connections (autocannon, HTTP/JSON). Prints each run's throughput and CPU µs per
// request of every process, then the medians and the ratio B / A of the gateway's CPU per request.
// Usage: node bench/distributed/gateway-ab.js <dist of build A> [dist of build B=./dist] [seconds=8] [rounds=3]
//   e.g. cp -r dist /tmp/old-dist (before a change), then after it: node bench/distributed/gateway-ab.js /tmp/old-dist
//   --rate=N: N requests per second in all instead of as many as the cluster answers. On a busy
//   machine the closed loop's throughput swings several-fold from run to run, and a process's CPU
//   per request with it (fewer requests share each event-loop turn); at a fixed rate both builds
//   see the same traffic.
//   NEREID_GATEWAY_NODE_FLAGS: extra node flags for the gateways (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof).
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { ROOT, simpleBody, freePort, waitFor, stop, fmt } = require('../lib/util');
const { cpuMs, startRedis, stopAll } = require('./procs');

const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const rateFlag = process.argv.slice(2).find((a) => a.startsWith('--rate='));
/** Requests per second in all (autocannon's overallRate); absent: as fast as the cluster answers. */
const RATE = rateFlag ? Number(rateFlag.slice('--rate='.length)) : undefined;
const [distA, distB = path.join(ROOT, 'dist'), secondsArg, roundsArg] = positional;
if (!distA) {
  console.error('usage: node bench/distributed/gateway-ab.js <dist of build A> [dist of build B] [seconds] [rounds]');
  process.exit(2);
}
const SECONDS = Number(secondsArg || 8);
const ROUNDS = Number(roundsArg || 3);
const CONNECTIONS = 64;
/**
 * Seconds of closed-loop load before each measured run: at a few hundred requests per second V8
 * was still compiling the request path 20 s after start (a quarter of the gateway's CPU in
 * TurboFan, perf), so a short warm-up at a fixed rate measures the compiler.
 */
const WARMUP_S = Number(process.env.NEREID_BENCH_WARMUP_S || 6);
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const loadavg = () => os.loadavg().map((l) => l.toFixed(1)).join(' ');

/** A role of the build in `dist` (run as bin/nereid runs it, from this checkout's root and node_modules). */
async function startRole(dist, repo, redisUrl, role) {
  const http = await freePort();
  const grpc = await freePort();
  const metrics = await freePort();
  const flags = role === 'gateway' ? (process.env.NEREID_GATEWAY_NODE_FLAGS || '').split(' ').filter(Boolean) : [];
  const child = spawn(process.execPath, ['--initial-old-space-size=128', ...flags, path.join(path.resolve(dist), 'apps/nereid/src/main.js'),
    'serve', '--model-repository', repo, '--http-port', String(http), '--grpc-port', String(grpc), '--metrics-port', String(metrics),
    '--http-address', '127.0.0.1', '--grpc-address', '127.0.0.1', '--log-info=false', '--role', role, '--redis', redisUrl], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, NODE_PATH: path.join(ROOT, 'node_modules'), GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=134217728' },
  });
  try {
    await waitFor(`http://127.0.0.1:${http}/v2/health/ready`);
  } catch (e) {
    await stop(child);
    throw e;
  }
  return { child, http, stop: () => stop(child) };
}

async function load(port, duration, pids, rate = RATE) {
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMs(pid)]));
  const r = await new Promise((resolve, reject) => {
    require('autocannon')({
      url: `http://127.0.0.1:${port}/v2/models/simple/infer`, method: 'POST', body: simpleBody(), headers: { 'content-type': 'application/json' },
      connections: CONNECTIONS, duration, ...(rate ? { overallRate: rate } : {}),
    }, (err, result) => (err ? reject(err) : resolve(result)));
  });
  const n = Math.max(1, r.requests.total);
  r.cpu = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, ((cpuMs(pid) - before[k]) * 1000) / n]));
  return r;
}

async function main() {
  console.log(`bench/distributed gateway A/B: simple, ${CONNECTIONS} connections${RATE ? ` at ${RATE} requests/s` : ''}, ${SECONDS}s per run, ${ROUNDS} round(s), load average ${loadavg()}`);
  console.log(`A = ${distA}\nB = ${distB}`);
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-gateway-ab-'));
  fs.cpSync(path.join(ROOT, 'models/simple'), path.join(repo, 'simple'), { recursive: true });
  const redis = await startRedis();
  const procs = [redis];
  const runs = { A: [], B: [] };
  try {
    const worker = await startRole(distB, repo, redis.url, 'worker');
    procs.push(worker);
    const scheduler = await startRole(distB, repo, redis.url, 'scheduler');
    procs.push(scheduler);
    for (let i = 0; i < ROUNDS; i++) {
      for (const [name, dist] of [['A', distA], ['B', distB]]) {
        const gateway = await startRole(dist, repo, redis.url, 'gateway');
        try {
          await load(gateway.http, WARMUP_S, {}, undefined);
          const pids = { gateway: gateway.child.pid, scheduler: scheduler.child.pid, worker: worker.child.pid, redis: redis.child.pid };
          const r = await load(gateway.http, SECONDS, pids);
          runs[name].push(r);
          const cpu = Object.entries(r.cpu).map(([k, us]) => `${k} ${fmt(us)}`).join(', ');
          console.log(`${name} round ${i + 1}: ${fmt(r.requests.average).padStart(6)} req/s  p50 ${fmt(r.latency.p50, 1)} ms  errors ${r.errors + r.non2xx}  CPU us/request: ${cpu}  (load ${loadavg()})`);
        } finally {
          await gateway.stop();
        }
      }
    }
  } finally {
    await stopAll(procs);
    fs.rmSync(repo, { recursive: true, force: true });
  }
  const med = (name, f) => median(runs[name].map(f));
  for (const name of ['A', 'B']) {
    console.log(`median ${name}: ${fmt(med(name, (r) => r.requests.average))} req/s, gateway ${fmt(med(name, (r) => r.cpu.gateway))} us/request, scheduler ${fmt(med(name, (r) => r.cpu.scheduler))}, worker ${fmt(med(name, (r) => r.cpu.worker))}, redis ${fmt(med(name, (r) => r.cpu.redis))}`);
  }
  console.log(`gateway CPU per request B / A: ${(med('B', (r) => r.cpu.gateway) / med('A', (r) => r.cpu.gateway)).toFixed(2)}x; throughput B / A: ${(med('B', (r) => r.requests.average) / med('A', (r) => r.requests.average)).toFixed(2)}x`);
  console.log(`load average at the end: ${loadavg()}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

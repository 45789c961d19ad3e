#!/usr/bin/env node
'use strict';
// bench/distributed, the gateway's share: the CPU one gateway process spends per request, for two
// builds of Nereid, against the same scheduler + worker + redis-server (of this build), the two
// gateways started in turn (A, B, A, B, ...) so that both see the same minutes of the machine.
// `simple` at 64 connections (autocannon, HTTP/JSON). Prints each run's throughput and CPU µs per
// request of every process, then the medians and the ratio B / A of the gateway's CPU per request.
// Usage: node bench/distributed/gateway-ab.js <dist of build A> [dist of build B=./dist] [seconds=8] [rounds=3]
//   e.g. cp -r dist /tmp/old-dist (before a change), then after it: node bench/distributed/gateway-ab.js /tmp/old-dist
//   NEREID_GATEWAY_NODE_FLAGS: extra node flags for the gateways (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof).
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { ROOT, startNereid, simpleBody, postLoad, freePort, waitFor, stop, fmt } = require('../lib/util');
const { cpuMs, startRedis, stopAll } = require('./procs');

const [distA, distB = path.join(ROOT, 'dist'), secondsArg, roundsArg] = process.argv.slice(2);
if (!distA) {
  console.error('usage: node bench/distributed/gateway-ab.js <dist of build A> [dist of build B] [seconds] [rounds]');
  process.exit(2);
}
const SECONDS = Number(secondsArg || 8);
const ROUNDS = Number(roundsArg || 3);
const CONNECTIONS = 64;
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const loadavg = () => os.loadavg().map((l) => l.toFixed(1)).join(' ');

/** A gateway of the build in `dist` (run as bin/nereid runs it, node_modules of this checkout). */
async function startGateway(dist, repo, redisUrl) {
  const http = await freePort();
  const grpc = await freePort();
  const metrics = await freePort();
  const flags = (process.env.NEREID_GATEWAY_NODE_FLAGS || '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, ['--initial-old-space-size=128', ...flags, path.join(path.resolve(dist), 'apps/nereid/src/main.js'),
    'serve', '--model-repository', repo, '--http-port', String(http), '--grpc-port', String(grpc), '--metrics-port', String(metrics),
    '--http-address', '127.0.0.1', '--grpc-address', '127.0.0.1', '--log-info=false', '--role', 'gateway', '--redis', redisUrl], {
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

async function load(port, duration, pids) {
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMs(pid)]));
  const r = await postLoad(`http://127.0.0.1:${port}/v2/models/simple/infer`, simpleBody(), { connections: CONNECTIONS, duration });
  const n = Math.max(1, r.requests.total);
  r.cpu = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, ((cpuMs(pid) - before[k]) * 1000) / n]));
  return r;
}

async function main() {
  console.log(`bench/distributed gateway A/B: simple, ${CONNECTIONS} connections, ${SECONDS}s per run, ${ROUNDS} round(s), load average ${loadavg()}`);
  console.log(`A = ${distA}\nB = ${distB}`);
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-gateway-ab-'));
  fs.cpSync(path.join(ROOT, 'models/simple'), path.join(repo, 'simple'), { recursive: true });
  const redis = await startRedis();
  const procs = [redis];
  const runs = { A: [], B: [] };
  try {
    const worker = await startNereid(repo, ['--role', 'worker', '--redis', redis.url]);
    procs.push(worker);
    const scheduler = await startNereid(repo, ['--role', 'scheduler', '--redis', redis.url]);
    procs.push(scheduler);
    for (let i = 0; i < ROUNDS; i++) {
      for (const [name, dist] of [['A', distA], ['B', distB]]) {
        const gateway = await startGateway(dist, repo, redis.url);
        try {
          await load(gateway.http, 2, {});
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

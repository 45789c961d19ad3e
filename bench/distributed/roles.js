#!/usr/bin/env node
'use strict';
// bench/distributed, the roles' cost: `simple` at 64 HTTP/JSON connections through 1 gateway + 1
// scheduler + 1 worker over a private redis-server, for two builds of Nereid run alternately in
// the same minutes (the baseline: another checkout's bin/nereid + dist/, e.g. a copy of dist/ made
// before a change; Nereid: this checkout). Prints, per run and as medians, the CPU each process
// spent per request (utime + stime from /proc/<pid>/stat over the measured seconds) and the Redis
// commands per request (INFO commandstats), then new / baseline for each. On a shared machine
// throughput swings with the other work; CPU and commands per request are what survive the load.
// Usage: node bench/distributed/roles.js --baseline <dir with bin/nereid> [--nereid <dir>] [--rate N] [seconds=8] [rounds=3]
//   (a dir: a checkout with bin/nereid and a built dist/, e.g. `git archive <commit>` + node_modules
//   linked + `node scripts/build.js`; --nereid defaults to this checkout)
//   NEREID_BENCH_PROFILE=<dir>: each role of this checkout's runs writes a --cpu-prof there.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const net = require('node:net');
const { spawn } = require('node:child_process');
const { ROOT, freePort, waitFor, stop, simpleBody, postLoad, fmt } = require('../lib/util');
const { cpuMs, startRedis, stopAll } = require('./procs');

const argv = process.argv.slice(2);
const option = (name) => {
  const at = argv.indexOf(name);
  if (at < 0) return undefined;
  argv.splice(at, 2);
  return path.resolve(process.argv[process.argv.indexOf(name) + 1]);
};
/** `--rate N`: N requests/s in all (autocannon's overallRate) instead of as many as 64 connections get answered. */
const rateAt = argv.indexOf('--rate');
const RATE = rateAt >= 0 ? Number(argv.splice(rateAt, 2)[1]) : undefined;
const BASELINE = option('--baseline');
/** The build measured against the baseline (default: this checkout). */
const NEREID = option('--nereid') ?? ROOT;
const rest = argv;
const SECONDS = Number(rest[0] || 8);
const ROUNDS = Number(rest[1] || 3);
const CONNECTIONS = 64;
const ROLES = ['gateway', 'scheduler', 'worker', 'redis'];
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** `simple` requests from 64 connections for `duration` s: as fast as answered, or RATE per second in all. */
function load(url, duration) {
  if (RATE === undefined) return postLoad(url, simpleBody(), { connections: CONNECTIONS, duration });
  const autocannon = require('autocannon');
  return new Promise((resolve, reject) => {
    autocannon({ url, method: 'POST', body: simpleBody(), headers: { 'content-type': 'application/json' }, connections: CONNECTIONS, duration, overallRate: RATE },
      (err, r) => (err ? reject(err) : resolve(r)));
  });
}

/** One Redis command on a fresh connection (RESP), the reply as text. */
function redisCommand(port, ...args) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let text = '';
    s.on('data', (d) => {
      text += d;
      // INFO answers one bulk string: done once its announced length has arrived.
      const m = /^\$(\d+)\r\n/.exec(text);
      if (m && Buffer.byteLength(text) >= m[0].length + Number(m[1]) + 2) s.end();
    });
    s.on('end', () => resolve(text));
    s.on('error', reject);
    s.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
  });
}

/** Calls per command so far (INFO commandstats). */
async function commandCalls(port) {
  const out = {};
  for (const m of (await redisCommand(port, 'INFO', 'commandstats')).matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) out[m[1]] = Number(m[2]);
  return out;
}

async function startRole(root, repo, role, redisUrl, profileDir) {
  const http = await freePort();
  // --cpu-prof is refused in NODE_OPTIONS: a profiled role runs node itself, with the options bin/nereid gives it.
  const [cmd, pre] = profileDir
    ? [process.execPath, ['--initial-old-space-size=128', '--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${role}-${Date.now()}.cpuprofile`, path.join(root, 'dist/apps/nereid/src/main.js')]]
    : [path.join(root, 'bin/nereid'), []];
  const child = spawn(cmd, [...pre, 'serve', '--model-repository', repo, '--http-port', String(http),
    '--grpc-port', String(await freePort()), '--metrics-port', String(await freePort()), '--http-address', '127.0.0.1',
    '--grpc-address', '127.0.0.1', '--log-info=false', '--role', role, '--redis', redisUrl],
  { stdio: ['ignore', 'inherit', 'inherit'] });
  const proc = { child, http, stop: () => stop(child) };
  try {
    await waitFor(`http://127.0.0.1:${http}/v2/health/ready`);
  } catch (e) {
    await proc.stop();
    throw e;
  }
  return proc;
}

/** One cluster of `root`'s build: warm-up, then the measured load; CPU µs and commands per request. */
async function run(root, repo, profileDir) {
  const redis = await startRedis();
  const procs = [redis];
  try {
    const worker = await startRole(root, repo, 'worker', redis.url, profileDir);
    procs.push(worker);
    const scheduler = await startRole(root, repo, 'scheduler', redis.url, profileDir);
    procs.push(scheduler);
    const gateway = await startRole(root, repo, 'gateway', redis.url, profileDir);
    procs.push(gateway);
    const url = `http://127.0.0.1:${gateway.http}/v2/models/simple/infer`;
    await load(url, 2);
    const pids = { gateway: gateway.child.pid, scheduler: scheduler.child.pid, worker: worker.child.pid, redis: redis.child.pid };
    const redisPort = Number(new URL(redis.url).port);
    const cpu0 = Object.fromEntries(ROLES.map((k) => [k, cpuMs(pids[k])]));
    const calls0 = await commandCalls(redisPort);
    const r = await load(url, SECONDS);
    const calls1 = await commandCalls(redisPort);
    const n = Math.max(1, r.requests.total);
    const cpu = Object.fromEntries(ROLES.map((k) => [k, ((cpuMs(pids[k]) - cpu0[k]) * 1000) / n]));
    const commands = {};
    for (const [c, v] of Object.entries(calls1)) {
      const d = (v - (calls0[c] ?? 0)) / n;
      if (d >= 0.005 && c !== 'info') commands[c] = d;
    }
    return { rps: r.requests.average, p50: r.latency.p50, errors: r.errors + r.non2xx, cpu, commands };
  } finally {
    await stopAll(procs);
  }
}

function line(name, r) {
  const total = Object.values(r.commands).reduce((a, b) => a + b, 0);
  const cmds = Object.entries(r.commands).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(' ');
  console.log(`${name.padEnd(9)} ${fmt(r.rps).padStart(6)} req/s p50 ${fmt(r.p50, 1)} ms err ${r.errors}  CPU us/req ` +
    `${ROLES.map((k) => `${k} ${fmt(r.cpu[k])}`).join(' ')}  redis cmds/req ${total.toFixed(2)} (${cmds})`);
}

async function main() {
  if (!BASELINE || !fs.existsSync(path.join(BASELINE, 'bin/nereid'))) {
    console.error('usage: node bench/distributed/roles.js --baseline <dir with bin/nereid and dist/> [seconds] [rounds]');
    process.exit(2);
  }
  const loadavg = () => os.loadavg().map((l) => l.toFixed(1)).join(' ');
  console.log(`bench/distributed/roles: baseline ${BASELINE}, nereid ${NEREID}; simple, ${CONNECTIONS} connections${RATE ? ` at ${RATE} requests/s` : ''}, ${SECONDS}s x ${ROUNDS} rounds per build, alternating; load average ${loadavg()}`);
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-roles-'));
  fs.cpSync(path.join(ROOT, 'models/simple'), path.join(repo, 'simple'), { recursive: true });
  const profile = process.env.NEREID_BENCH_PROFILE;
  const results = { baseline: [], nereid: [] };
  try {
    for (let i = 0; i < ROUNDS; i++) {
      // Alternate which goes first, so that neither build always meets the same moment of the load.
      const order = i % 2 === 0 ? ['baseline', 'nereid'] : ['nereid', 'baseline'];
      for (const which of order) {
        const r = await run(which === 'baseline' ? BASELINE : NEREID, repo, which === 'nereid' ? profile : undefined);
        line(which, r);
        results[which].push(r);
      }
    }
  } finally {
    fs.rmSync(repo, { recursive: true, force: true });
  }
  const med = (rs) => ({
    rps: median(rs.map((r) => r.rps)),
    p50: median(rs.map((r) => r.p50)),
    errors: rs.reduce((a, r) => a + r.errors, 0),
    cpu: Object.fromEntries(ROLES.map((k) => [k, median(rs.map((r) => r.cpu[k]))])),
    commands: Object.fromEntries([...new Set(rs.flatMap((r) => Object.keys(r.commands)))].map((c) => [c, median(rs.map((r) => r.commands[c] ?? 0))])),
  });
  const b = med(results.baseline);
  const n = med(results.nereid);
  console.log('medians:');
  line('baseline', b);
  line('nereid', n);
  const ratio = (k) => (n.cpu[k] / b.cpu[k]).toFixed(2);
  const sum = (r) => ROLES.reduce((a, k) => a + r.cpu[k], 0);
  const cmds = (r) => Object.values(r.commands).reduce((a, v) => a + v, 0);
  console.log(`nereid / baseline: CPU per request ${ROLES.map((k) => `${k} ${ratio(k)}x`).join(', ')}, all roles ${(sum(n) / sum(b)).toFixed(2)}x ` +
    `(${fmt(sum(b))} -> ${fmt(sum(n))} us); scheduler + worker ${((n.cpu.scheduler + n.cpu.worker) / (b.cpu.scheduler + b.cpu.worker)).toFixed(2)}x; ` +
    `redis commands per request ${(cmds(n) / cmds(b)).toFixed(2)}x; throughput ${(n.rps / b.rps).toFixed(2)}x`);
  console.log(`load average at the end: ${loadavg()}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

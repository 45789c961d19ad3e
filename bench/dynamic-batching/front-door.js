#!/usr/bin/env node
'use strict';
// The HTTP front door's CPU per request, without a model: bench/dynamic-batching's request (binary
// FP32 [1,512] in, binary [1,512] out) sent by closed-loop.js (32 connections) to
//   bare      a bare node:http server answering with canned bytes (the floor node:http puts here),
//   <root>    the built front door of <root>/dist (startHttpServer over a core that answers at once),
// each server in a process of its own, rounds interleaved in the same minutes. CPU per request is
// read from /proc/<pid>/task/*/stat (utime + stime): the event-loop thread alone, and the process
// with its helper threads (GC, libuv, the onnxruntime session's worker thread). CPU per request
// survives a shared machine better than req/s.
// With --model, each <root> is a whole server instead (<root>/bin/nereid serve) holding the shipped
// mlp with its dynamic batching, and no bare server: the batched request's CPU from HTTP to model.
// Usage: node bench/dynamic-batching/front-door.js [--model] [seconds=3] [rounds=5] [root ...]
//   (roots default to this checkout; e.g. a copy of an older build for an A/B: /tmp/old, holding
//   dist/, bin/ and node_modules and models links). Prints each round, then the medians.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { closedLoop } = require('./closed-loop');
const { binaryRequest } = require('./mlp-wire');
const { ROOT, freePort, waitFor } = require('../lib/util');

const MODEL = process.argv[2] === '--model';
const args = process.argv.slice(MODEL ? 3 : 2);
const SECONDS = Number(args[0] || 3);
const ROUNDS = Number(args[1] || 5);
const ROOTS = args.length > 2 ? args.slice(2).map((r) => path.resolve(r)) : [ROOT];
const TICK_US = 1e6 / 100; // USER_HZ: /proc's clock ticks are 10 ms on Linux

/** utime + stime in µs of the event-loop thread (and its stime alone) and of the whole process. */
function cpuOf(pid) {
  let main = 0;
  let mainSys = 0;
  let all = 0;
  let faults = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    let stat;
    try {
      stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // a thread that ended meanwhile
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const us = (Number(fields[11]) + Number(fields[12])) * TICK_US;
    all += us;
    faults += Number(fields[7]);
    if (Number(tid) === pid) {
      main = us;
      mainSys = Number(fields[12]) * TICK_US;
    }
  }
  return { main, mainSys, all, faults };
}

/** <root>/bin/nereid serving `repo`; resolves once ready (the server is stopped if it never is). */
async function startNereid(root, repo) {
  const port = await freePort();
  // As bench/lib/util.js's startNereid (run.js): gRPC and metrics served too, on ports of their own.
  const child = spawn(path.join(root, 'bin/nereid'), ['serve', '--model-repository', repo, '--http-port', String(port),
    '--grpc-port', String(await freePort()), '--metrics-port', String(await freePort()), '--http-address', '127.0.0.1',
    '--grpc-address', '127.0.0.1', '--log-info=false'], { stdio: ['ignore', 'inherit', 'inherit'] });
  try {
    await waitFor(`http://127.0.0.1:${port}/v2/health/ready`);
  } catch (e) {
    child.kill('SIGTERM');
    throw e;
  }
  return { kind: root, child, port };
}

function startServer(kind) {
  const child = spawn(process.execPath, ['--initial-old-space-size=128', path.join(__dirname, 'front-door-server.js'), kind], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=134217728' },
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${kind}: server exited (${code})`)));
    child.stdout.once('data', (d) => resolve({ kind, child, port: Number(String(d).trim()) }));
  });
}

/** Every server started, stopped when this script exits however it ends. */
const servers = [];
process.on('exit', () => {
  for (const s of servers) if (s.child.exitCode === null) s.child.kill('SIGTERM');
});

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const label = (kind) => (kind === 'bare' ? 'bare' : kind === ROOT ? 'this build' : kind);

async function main() {
  const req = binaryRequest();
  const headers = { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(req.headerLength) };
  let repo;
  if (MODEL) {
    repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-front-door-'));
    fs.cpSync(path.join(ROOT, 'models/mlp'), path.join(repo, 'mlp'), { recursive: true });
    for (const root of ROOTS) servers.push(await startNereid(root, repo));
  } else {
    for (const kind of ['bare', ...ROOTS]) servers.push(await startServer(kind));
  }
  const run = (s, seconds) => closedLoop({ port: s.port, path: '/v2/models/mlp/infer', body: req.body, headers, connections: 32, seconds });
  for (const s of servers) await run(s, 1); // warm-up: JIT, pools
  const results = new Map(servers.map((s) => [s.kind, { main: [], sys: [], all: [], faults: [], client: [], rps: [] }]));
  console.log(`${MODEL ? 'mlp (dynamic batching) through the whole server' : 'front door'} CPU per request, ${SECONDS} s rounds, 32 connections, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  for (let round = 0; round < ROUNDS; round++) {
    // Rotate the order so no server always runs first (or right after another's GC).
    const order = servers.map((_, i) => servers[(i + round) % servers.length]);
    for (const s of order) {
      const before = cpuOf(s.child.pid);
      const client = process.cpuUsage();
      const r = await run(s, SECONDS);
      const c = process.cpuUsage(client);
      const after = cpuOf(s.child.pid);
      if (r.errors > 0) throw new Error(`${label(s.kind)}: ${r.errors} failed requests (${r.firstError?.message})`);
      const x = results.get(s.kind);
      x.main.push((after.main - before.main) / r.requests);
      x.sys.push((after.mainSys - before.mainSys) / r.requests);
      x.all.push((after.all - before.all) / r.requests);
      x.faults.push((after.faults - before.faults) / r.requests);
      x.client.push((c.user + c.system) / r.requests);
      x.rps.push(r.rps);
      console.log(`round ${round + 1} ${label(s.kind).padEnd(24)} ${r.rps.toFixed(0).padStart(6)} req/s  event loop ${x.main.at(-1).toFixed(1).padStart(5)} µs (system ${x.sys.at(-1).toFixed(1).padStart(4)})  ` +
        `process ${x.all.at(-1).toFixed(1).padStart(5)} µs  client ${x.client.at(-1).toFixed(1).padStart(5)} µs per request, ${x.faults.at(-1).toFixed(2)} page faults`);
    }
  }
  console.log(`medians (load average now ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}):`);
  const baseKind = MODEL ? ROOTS[0] : 'bare';
  const base = results.get(baseKind);
  for (const s of servers) {
    const x = results.get(s.kind);
    console.log(`${label(s.kind).padEnd(24)} ${median(x.rps).toFixed(0).padStart(6)} req/s  event loop ${median(x.main).toFixed(1).padStart(5)} µs ` +
      `(system ${median(x.sys).toFixed(1)}; ${(median(x.main) / median(base.main)).toFixed(2)}x ${label(baseKind)})  process ${median(x.all).toFixed(1).padStart(5)} µs  client ${median(x.client).toFixed(1)} µs  ${median(x.faults).toFixed(2)} page faults per request`);
  }
  for (const s of servers) s.child.kill('SIGTERM');
  if (repo) setTimeout(() => fs.rmSync(repo, { recursive: true, force: true }), 1000);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

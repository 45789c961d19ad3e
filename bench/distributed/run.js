#!/usr/bin/env node
'use strict';
// bench/distributed: `simple` at 64 concurrent clients (autocannon, HTTP/JSON), the embedded server
// against the distributed roles over a private redis-server on loopback (1 gateway + 1 scheduler +
// 1 worker, three processes), in one run. Prints throughput, p50/p99, the ratio distributed /
// embedded and the p50 the roles add. Issue 13's targets: ratio >= 0.5, added p50 <= 1.5 ms.
// Usage: node bench/distributed/run.js [seconds per run=10]   (needs `npm run build` and redis-server)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { ROOT, freePort, startNereid, stop, simpleBody, postLoad, fmt } = require('../lib/util');

const SECONDS = Number(process.argv[2] || 10);
const CONNECTIONS = 64;

function load(port, duration = SECONDS) {
  return postLoad(`http://127.0.0.1:${port}/v2/models/simple/infer`, simpleBody(), { connections: CONNECTIONS, duration });
}

async function startRedis() {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  await new Promise((resolve, reject) => {
    child.once('error', reject);
    setTimeout(resolve, 300);
  });
  return { url: `redis://127.0.0.1:${port}`, child };
}

function summary(name, r) {
  const errors = r.errors + r.non2xx;
  console.log(`${name.padEnd(12)} ${fmt(r.requests.average).padStart(7)} req/s   p50 ${fmt(r.latency.p50, 2)} ms   p99 ${fmt(r.latency.p99, 2)} ms   errors ${errors}`);
  return r;
}

async function main() {
  console.log(`bench/distributed: simple, ${CONNECTIONS} connections, ${SECONDS}s per run, ${os.cpus().length} cpus, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}, node ${process.version}`);
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-distributed-'));
  fs.cpSync(path.join(ROOT, 'models/simple'), path.join(repo, 'simple'), { recursive: true });
  const quiet = ['--log-info=false'];

  const embedded = await startNereid(repo, quiet);
  await load(embedded.http, 2); // warm-up
  const e = summary('embedded', await load(embedded.http));
  await embedded.stop();

  const redis = await startRedis();
  const roles = [];
  try {
    const worker = await startNereid(repo, ['--role', 'worker', '--redis', redis.url, ...quiet]);
    roles.push(worker);
    roles.push(await startNereid(repo, ['--role', 'scheduler', '--redis', redis.url, ...quiet]));
    const gateway = await startNereid(repo, ['--role', 'gateway', '--redis', redis.url, ...quiet]);
    roles.push(gateway);
    await load(gateway.http, 2); // warm-up
    const d = summary('distributed', await load(gateway.http));
    console.log(`ratio distributed / embedded: ${(d.requests.average / e.requests.average).toFixed(2)}x (target >= 0.5x)`);
    console.log(`added p50: ${(d.latency.p50 - e.latency.p50).toFixed(2)} ms (target <= 1.5 ms)`);
  } finally {
    for (const r of roles.reverse()) await r.stop();
    await stop(redis.child);
    fs.rmSync(repo, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

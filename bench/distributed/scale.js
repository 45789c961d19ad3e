#!/usr/bin/env node
'use strict';
// bench/distributed, part 2: scale-out. The `sleep20` python model (bench/distributed/models: each
// batch of up to 2 requests spends a fixed 20 ms off the CPU, a sleep standing in for a GPU, so one
// worker's instance serves at most 100 requests/s) behind 1 gateway + 1 scheduler + N workers
// (N = 1, 2, 4; a fresh cluster on a private redis-server for each N), loaded by 64 HTTP/JSON
// clients, in one run. Prints each N's throughput and its ratio to N = 1. Issue 13's targets:
// 2 workers >= 1.8x, 4 workers >= 3.4x.
// Usage: node bench/distributed/scale.js [seconds per run=10]   (run.js runs it as its second part;
//   NEREID_BENCH_WORKERS=1,2,4 chooses the worker counts, NEREID_BENCH_BATCH=2 the model's max_batch_size)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startNereid, postLoad, fmt } = require('../lib/util');
const { startRedis, stopAll } = require('./procs');

const CONNECTIONS = 64;
const WORKERS = (process.env.NEREID_BENCH_WORKERS ?? '1,2,4').split(',').map(Number);
const BATCH = Number(process.env.NEREID_BENCH_BATCH ?? 2);
const BODY = JSON.stringify({ inputs: [{ name: 'INPUT0', shape: [1, 1], datatype: 'INT32', data: [7] }] });

function load(port, duration) {
  return postLoad(`http://127.0.0.1:${port}/v2/models/sleep20/infer`, BODY, { connections: CONNECTIONS, duration });
}

/** Requests per execution of the model over the cluster (its statistics, summed by the gateway); undefined if unknown. */
async function batchSize(port) {
  try {
    const r = await fetch(`http://127.0.0.1:${port}/v2/models/sleep20/stats`);
    const s = (await r.json()).model_stats?.[0];
    return s && s.execution_count > 0 ? s.inference_count / s.execution_count : undefined;
  } catch {
    return undefined;
  }
}

async function cluster(repo, workers, seconds) {
  const redis = await startRedis();
  const procs = [redis];
  try {
    const redisArgs = ['--redis', redis.url];
    // One after another: python stubs starting side by side on a busy 2-core machine outlast the readiness wait.
    for (let i = 0; i < workers; i++) procs.push(await startNereid(repo, ['--role', 'worker', ...redisArgs]));
    procs.push(await startNereid(repo, ['--role', 'scheduler', ...redisArgs]));
    const gateway = await startNereid(repo, ['--role', 'gateway', ...redisArgs]);
    procs.push(gateway);
    await load(gateway.http, 3); // warm-up: the scheduler batches for every worker's instance by now
    const r = await load(gateway.http, seconds);
    const batch = await batchSize(gateway.http);
    const errors = r.errors + r.non2xx;
    console.log(`${String(workers).padStart(2)} worker(s)  ${fmt(r.requests.average).padStart(6)} req/s   p50 ${fmt(r.latency.p50, 1)} ms   p99 ${fmt(r.latency.p99, 1)} ms   errors ${errors}` +
      (batch === undefined ? '' : `   requests per batch ${batch.toFixed(2)} (since start)`));
    return r;
  } finally {
    await stopAll(procs);
  }
}

async function main({ seconds = Number(process.argv[2] || 10) } = {}) {
  const loadavg = () => os.loadavg().map((l) => l.toFixed(1)).join(' ');
  console.log(`bench/distributed scale-out: sleep20 (20 ms per batch of <= ${BATCH}, off the CPU), ${CONNECTIONS} connections, ${seconds}s per run, 1 gateway + 1 scheduler + N workers, load average ${loadavg()}`);
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-scale-'));
  try {
    fs.cpSync(path.join(__dirname, 'models/sleep20'), path.join(repo, 'sleep20'), { recursive: true });
    const config = path.join(repo, 'sleep20/config.pbtxt');
    fs.writeFileSync(config, fs.readFileSync(config, 'utf8').replace(/^max_batch_size: \d+$/m, `max_batch_size: ${BATCH}`));
    const results = new Map();
    for (const n of WORKERS) results.set(n, await cluster(repo, n, seconds));
    const one = results.get(1)?.requests.average;
    const targets = { 2: 1.8, 4: 3.4 };
    for (const n of WORKERS.filter((w) => w > 1 && one !== undefined)) {
      console.log(`${n} workers / 1 worker: ${(results.get(n).requests.average / one).toFixed(2)}x${targets[n] ? ` (target >= ${targets[n]}x)` : ''}`);
    }
    console.log(`load average at the end: ${loadavg()}`);
  } finally {
    fs.rmSync(repo, { recursive: true, force: true });
  }
}

module.exports = { main };

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}

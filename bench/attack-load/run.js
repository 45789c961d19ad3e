#!/usr/bin/env node
'use strict';
// The acceptance load test of issue 16: while 8 well-behaved clients keep sending inference
// requests, three resource attacks run one after the other, each for a phase (10 s by default):
//   1. a client that pipelines infer requests over one keep-alive connection and never reads,
//   2. 64 concurrent gzip bombs (~1 MB each, inflating to 1 GB), sent again as soon as answered,
//   3. 1,100 half-open connections (headers and part of a body, then nothing).
// The server is the built CLI started as `npm start` starts it (bin/nereid, ./models). Its RSS is
// sampled every 50 ms: idle (after a warm-up), the peak of each phase, and after the attacks end.
// Holds when the normal clients saw 0 failures, every peak is <= 2x idle, and RSS comes back
// within 20% of idle. `npm run build` first.
//
//   node bench/attack-load/run.js [--phase-secs 10] [--fd-limit 1024] [--repo ./models]
//                                 [--only pipelining,bombs,half-open] [--compare-native [rounds]] [-- <serve flags>]
//
// --compare-native runs the server alternately without native/malloc-trim (NEREID_NATIVE_OFF=malloc-trim:
// no trim after the idle collection) and with it, `rounds` times each (1), and prints both.
//
// --fd-limit starts the server under that open-file limit (soft and hard), as on a host whose
// limit is 1024: the server must refuse connections beyond what its descriptors allow.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const zlib = require('node:zlib');
const { BIN, ROOT, freePort, waitFor, stop, fmt } = require('../lib/util');

const INFER_BODY = Buffer.from(
  JSON.stringify({
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, (_, i) => i) },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, () => 1) },
    ],
  }),
);
const INFER_PATH = '/v2/models/simple/infer';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** RSS of a process in MB (VmRSS), or NaN once it is gone. */
function rssMb(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

async function startServer({ repo, fdLimit, extra, env }) {
  const ports = { http: await freePort(), grpc: await freePort(), metrics: await freePort() };
  const args = ['serve', '--model-repository', repo, '--http-port', String(ports.http), '--grpc-port', String(ports.grpc),
    '--metrics-port', String(ports.metrics), '--http-address', '127.0.0.1', '--grpc-address', '127.0.0.1', '--log-info=false', ...extra];
  // sh execs bin/nereid, which execs node: the child's pid is the server's.
  const script = fdLimit ? `ulimit -n ${fdLimit} && exec "$0" "$@"` : 'exec "$0" "$@"';
  const child = spawn('sh', ['-c', script, BIN, ...args], { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, ...env } });
  await waitFor(`http://127.0.0.1:${ports.http}/v2/health/ready`, 60000);
  return { child, pid: child.pid, port: ports.http, stop: () => stop(child) };
}

/** One well-behaved client: a keep-alive connection, one request at a time, every answer checked. */
function normalClient(port, stats, running) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const once = () =>
    new Promise((resolve) => {
      const started = Date.now();
      const req = http.request({ host: '127.0.0.1', port, path: INFER_PATH, method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => {
          const ok = res.statusCode === 200 && text.includes('"OUTPUT0"');
          if (ok) stats.ok++;
          else stats.failures.push(`${res.statusCode} ${text.slice(0, 200)}`);
          stats.maxLatencyMs = Math.max(stats.maxLatencyMs, Date.now() - started);
          resolve();
        });
      });
      req.on('error', (e) => {
        stats.failures.push(String(e.code ?? e.message));
        resolve();
      });
      req.end(INFER_BODY);
    });
  const loop = (async () => {
    while (running.value) await once();
    agent.destroy();
  })();
  return loop;
}

/** Attack 1: pipelined infer requests, written whenever the socket takes more; nothing is read. */
async function pipeliningAttack(port, phaseMs) {
  const one = `POST ${INFER_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${INFER_BODY.length}\r\n\r\n${INFER_BODY}`;
  const chunk = Buffer.from(one.repeat(200));
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  socket.pause();
  let written = 0;
  const deadline = Date.now() + phaseMs;
  await new Promise((resolve) => {
    const pump = () => {
      while (Date.now() < deadline && !socket.destroyed) {
        written += chunk.length;
        if (!socket.write(chunk)) return void socket.once('drain', pump);
      }
      resolve();
    };
    socket.once('connect', pump);
    setTimeout(resolve, phaseMs + 100);
  });
  socket.destroy();
  return `${fmt(written / 1e6, 1)} MB written by the client in ${phaseMs / 1000} s`;
}

/** ~1 MB of gzip inflating to ~1 GB: concatenated members of 64 MiB of zeros. */
function gzipBomb() {
  const member = zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 9 });
  return Buffer.concat(Array.from({ length: Math.ceil((1024 * 1024) / member.length) }, () => member));
}

/** Attack 2: 64 concurrent gzip bombs, each sent again as soon as it is answered. */
async function gzipBombAttack(port, phaseMs) {
  const bomb = gzipBomb();
  const deadline = Date.now() + phaseMs;
  const answers = new Map();
  const send = () =>
    new Promise((resolve) => {
      const req = http.request(
        { host: '127.0.0.1', port, path: INFER_PATH, method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } },
        (res) => {
          res.resume();
          res.on('end', () => {
            answers.set(res.statusCode, (answers.get(res.statusCode) ?? 0) + 1);
            resolve();
          });
        },
      );
      req.on('error', (e) => {
        answers.set(e.code, (answers.get(e.code) ?? 0) + 1);
        resolve();
      });
      req.end(bomb);
    });
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (Date.now() < deadline) await send();
    }),
  );
  return `answers ${[...answers].map(([k, v]) => `${k}: ${v}`).join(', ')}`;
}

/** Attack 3: 1,100 connections that send headers and half a body, then nothing, for the phase. */
async function halfOpenAttack(port, phaseMs) {
  const sockets = [];
  let closedEarly = 0;
  const head = `POST ${INFER_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${INFER_BODY.length}\r\n\r\n`;
  for (let i = 0; i < 1100; i++) {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => undefined);
    s.on('close', () => closedEarly++);
    s.once('connect', () => s.write(head + INFER_BODY.subarray(0, INFER_BODY.length >> 1)));
    sockets.push(s);
    if (i % 100 === 99) await sleep(10);
  }
  await sleep(phaseMs);
  const closedByServer = closedEarly;
  for (const s of sockets) s.destroy();
  return `1100 opened, ${closedByServer} closed by the server during the phase`;
}

async function runAttackLoad(options = {}) {
  const phaseMs = options.phaseMs ?? 10000;
  const log = options.log ?? console.log;
  const server = await startServer({ repo: options.repo ?? path.join(ROOT, 'models'), fdLimit: options.fdLimit, extra: options.extra ?? [], env: options.env });
  try {
    // Warm-up: the model's first runs, the first connections, then idle.
    for (let i = 0; i < (options.warmup ?? 200); i++) await fetch(`http://127.0.0.1:${server.port}${INFER_PATH}`, { method: 'POST', body: INFER_BODY });
    await sleep(1000);
    const idleSamples = [];
    for (let i = 0; i < 10; i++) {
      idleSamples.push(rssMb(server.pid));
      await sleep(100);
    }
    const idle = idleSamples.sort((a, b) => a - b)[5];
    log(`server pid ${server.pid}, idle RSS ${fmt(idle, 1)} MB${options.fdLimit ? `, open-file limit ${options.fdLimit}` : ''}`);

    let peak = idle;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(server.pid) || 0)), 50);
    const running = { value: true };
    const stats = { ok: 0, failures: [], maxLatencyMs: 0 };
    const clients = Array.from({ length: 8 }, () => normalClient(server.port, stats, running));
    const phases = [];
    const attacks = [
      ['pipelining', 'pipelining, not reading', pipeliningAttack],
      ['bombs', '64 gzip bombs', gzipBombAttack],
      ['half-open', '1,100 half-open connections', halfOpenAttack],
    ].filter(([key]) => !options.only || options.only.includes(key));
    for (const [, name, attack] of attacks) {
      peak = rssMb(server.pid);
      const before = { ok: stats.ok, failures: stats.failures.length };
      const detail = await attack(server.port, phaseMs);
      phases.push({ name, peak, ok: stats.ok - before.ok, failures: stats.failures.length - before.failures, detail });
      log(`  ${name.padEnd(28)} peak RSS ${fmt(peak, 1).padStart(7)} MB (${fmt(peak / idle, 2)}x idle); normal requests ${stats.ok - before.ok} ok, ${stats.failures.length - before.failures} failed; ${detail}`);
    }
    running.value = false;
    await Promise.all(clients);
    clearInterval(sampler);
    // Memory back: sampled until within 20% of idle, for at most `settleMs` (15 s).
    const settleMs = options.settleMs ?? 15000;
    let after = rssMb(server.pid);
    const settleStart = Date.now();
    while (after > idle * 1.2 && Date.now() - settleStart < settleMs) {
      await sleep(250);
      after = rssMb(server.pid);
    }
    const liveMs = await (async () => {
      const t = Date.now();
      const r = await fetch(`http://127.0.0.1:${server.port}/v2/health/live`);
      return r.status === 200 ? Date.now() - t : NaN;
    })();
    const maxPeak = Math.max(...phases.map((p) => p.peak));
    const result = {
      idleMb: idle,
      peakMb: maxPeak,
      peakRatio: maxPeak / idle,
      afterMb: after,
      afterRatio: after / idle,
      settleMs: Date.now() - settleStart,
      normalOk: stats.ok,
      normalFailures: stats.failures.length,
      failureSamples: stats.failures.slice(0, 5),
      maxNormalLatencyMs: stats.maxLatencyMs,
      liveMs,
      phases,
    };
    result.holds = result.normalFailures === 0 && result.peakRatio <= 2 && result.afterRatio <= 1.2;
    log(`normal clients: ${stats.ok} ok, ${stats.failures.length} failed${stats.failures.length ? ` (${stats.failures.slice(0, 3).join(' | ')})` : ''}, slowest ${stats.maxLatencyMs} ms`);
    log(`peak RSS ${fmt(maxPeak, 1)} MB = ${fmt(result.peakRatio, 2)}x idle (limit 2x); after ${fmt(after, 1)} MB = ${fmt(result.afterRatio, 2)}x idle (limit 1.2x, reached in ${fmt(result.settleMs / 1000, 1)} s); /v2/health/live in ${liveMs} ms`);
    log(result.holds ? 'HOLDS' : 'DOES NOT HOLD');
    return result;
  } finally {
    await server.stop();
  }
}

/** Without and with native/malloc-trim, alternately: where RSS settles after the attacks. */
async function compareNative(options, rounds) {
  const runs = { without: [], with: [] };
  for (let i = 0; i < rounds; i++) {
    for (const [key, env] of [['without', { NEREID_NATIVE_OFF: 'malloc-trim' }], ['with', {}]]) {
      console.log(`--- ${key} malloc-trim${key === 'without' ? ' (NEREID_NATIVE_OFF=malloc-trim)' : ''}, round ${i + 1}`);
      runs[key].push(await runAttackLoad({ ...options, env }));
    }
  }
  const show = (r) => `idle ${fmt(r.idleMb, 1)} MB, peak ${fmt(r.peakRatio, 2)}x, after ${fmt(r.afterRatio, 2)}x in ${fmt(r.settleMs / 1000, 1)} s, normal ${r.normalOk} ok / ${r.normalFailures} failed`;
  console.log('--- summary (RSS after the attacks, x idle; limit 1.2x)');
  for (let i = 0; i < rounds; i++) {
    console.log(`round ${i + 1}: without ${show(runs.without[i])}`);
    console.log(`         with    ${show(runs.with[i])}  (after: ${fmt(runs.with[i].afterRatio / runs.without[i].afterRatio, 2)}x of without)`);
  }
  return runs.with.every((r) => r.holds);
}

module.exports = { runAttackLoad };

if (require.main === module) {
  const argv = process.argv.slice(2);
  const arg = (name) => {
    const i = argv.indexOf(name);
    return i === -1 ? undefined : argv[i + 1];
  };
  const phaseSecs = Number(arg('--phase-secs') ?? 10);
  const fdLimit = arg('--fd-limit') ? Number(arg('--fd-limit')) : undefined;
  const repo = arg('--repo') ? path.resolve(arg('--repo')) : undefined;
  // Anything after `--` goes to `nereid serve` as it is.
  const dash = argv.indexOf('--');
  const extra = dash === -1 ? [] : argv.slice(dash + 1);
  const only = arg('--only')?.split(',');
  const options = { phaseMs: phaseSecs * 1000, fdLimit, repo, extra, only };
  const compare = argv.indexOf('--compare-native');
  const rounds = compare === -1 ? 0 : Number(/^\d+$/.test(argv[compare + 1] ?? '') ? argv[compare + 1] : 1);
  (rounds > 0 ? compareNative(options, rounds) : runAttackLoad(options).then((r) => r.holds)).then(
    (holds) => process.exit(holds ? 0 : 1),
    (e) => {
      console.error(e);
      process.exit(2);
    },
  );
}

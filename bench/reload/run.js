#!/usr/bin/env node
'use strict';
// bench/reload: what reloads cost the requests that flow meanwhile (issue 14). One Nereid serves a
// small ONNX model (Y = X + stamp, the stamp naming the version folder it came from) to 16
// closed-loop clients; windows without reloads alternate with windows in which the model is
// reloaded over and over:
//   poll mode (default): a new version folder appears every second (version_policy latest 1, the
//     server polls every second), and the folder before the last is removed;
//   explicit mode: a version file changes and a load request follows, every 250 ms.
// p50 and p99 of the windows with reloads next to those without, and their ratio (target: p99
// during reloads at most 2x). Every answer is checked (status 200, a stamp of a version folder).
// Clients: one raw keep-alive HTTP connection each (bench/sequence-batching/raw-client.js), the
// request encoded once.
// Usage: node bench/reload/run.js [poll|explicit] [rounds=3] [window seconds=5]   (needs `npm run build`)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ROOT, startNereid, fmt } = require('../lib/util');
const { RawConnection, encodeRequest } = require('../sequence-batching/raw-client');
const { ELEM, valueInfo, node, initializer, encodeModel } = require(path.join(ROOT, 'scripts/onnx/onnx-builder'));

const MODE = process.argv[2] === 'explicit' ? 'explicit' : 'poll';
const ROUNDS = Number(process.argv[3] || 3);
const WINDOW_S = Number(process.argv[4] || 5);
const CLIENTS = 16;

function stampModel(stamp) {
  return encodeModel({
    graphName: `stamp_${stamp}`,
    nodes: [node('Add', ['X', 'STAMP'], ['Y'])],
    initializers: [initializer('STAMP', ELEM.FLOAT, [], new Float32Array([stamp]))],
    inputs: [valueInfo('X', ELEM.FLOAT, ['batch', 1])],
    outputs: [valueInfo('Y', ELEM.FLOAT, ['batch', 1])],
  });
}

const CONFIG = `name: "stamp"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]
dynamic_batching { }
`;

class Repo {
  constructor() {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-reload-'));
    this.staging = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-reload-staging-'));
    fs.mkdirSync(path.join(this.dir, 'stamp'));
    fs.writeFileSync(path.join(this.dir, 'stamp', 'config.pbtxt'), CONFIG);
    this.latest = 0;
    this.addVersion();
  }

  /** A new version folder, renamed into place whole; the one before the previous is removed. */
  addVersion() {
    const v = ++this.latest;
    const staged = path.join(this.staging, String(v));
    fs.mkdirSync(staged);
    fs.writeFileSync(path.join(staged, 'model.onnx'), stampModel(v));
    fs.renameSync(staged, path.join(this.dir, 'stamp', String(v)));
    const old = path.join(this.dir, 'stamp', String(v - 2));
    if (fs.existsSync(old)) fs.rmSync(old, { recursive: true });
  }

  /** The serving version's model file rewritten (a changed file: a reload of that version). */
  touchLatest() {
    const file = path.join(this.dir, 'stamp', String(this.latest), 'model.onnx');
    fs.writeFileSync(file, stampModel(this.latest));
    const t = new Date(Date.now() + 1000 * ++this.touches);
    fs.utimesSync(file, t, t);
  }
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main() {
  const repo = new Repo();
  repo.touches = 0;
  const args = ['--allow-metrics=false', '--log-error=false', '--log-warning=false'];
  if (MODE === 'poll') args.push('--model-control-mode=poll', '--repository-poll-secs=1');
  else args.push('--model-control-mode=explicit', '--load-model=stamp');
  const server = await startNereid(repo.dir, args);
  const request = encodeRequest(server.http, '/v2/models/stamp/infer', '{"inputs":[{"name":"X","shape":[1,1],"datatype":"FP32","data":[0]}]}');
  const load = encodeRequest(server.http, '/v2/repository/models/stamp/load', '{}');
  const conns = Array.from({ length: CLIENTS }, () => new RawConnection(server.http));
  await Promise.all(conns.map((c) => c.ready));
  const control = new RawConnection(server.http);
  await control.ready;

  let failures = [];
  const stamps = new Set();
  /** Runs the clients for one window; resolves with every request's latency in ms. */
  async function window(reloading) {
    const latencies = [];
    const end = performance.now() + WINDOW_S * 1000;
    let reloads = 0;
    let failedLoads = 0;
    const reloader = (async () => {
      if (!reloading) return;
      while (performance.now() < end) {
        if (MODE === 'poll') {
          repo.addVersion();
          reloads++;
          await new Promise((r) => setTimeout(r, 1000));
        } else {
          repo.touchLatest();
          const r = await control.send(load);
          if (r.status === 200) reloads++;
          else failedLoads++;
          await new Promise((r) => setTimeout(r, 250));
        }
      }
    })();
    await Promise.all(
      conns.map(async (conn) => {
        while (performance.now() < end) {
          const t0 = performance.now();
          const r = await conn.send(request);
          latencies.push(performance.now() - t0);
          if (r.status !== 200) {
            failures.push(`${r.status} ${r.body}`);
            continue;
          }
          const stamp = JSON.parse(r.body).outputs[0].data[0];
          if (!(stamp >= 1 && stamp <= repo.latest)) failures.push(`unexpected answer ${stamp}`);
          stamps.add(stamp);
        }
      }),
    );
    await reloader;
    return { latencies, reloads, failedLoads };
  }

  const steady = [];
  const during = [];
  let reloads = 0;
  let failedLoads = 0;
  await window(false); // warm-up, not counted
  for (let round = 0; round < ROUNDS; round++) {
    const a = await window(false);
    const b = await window(true);
    steady.push(...a.latencies);
    during.push(...b.latencies);
    reloads += b.reloads;
    failedLoads += b.failedLoads;
    const p = (l) => fmt(percentile([...l].sort((x, y) => x - y), 99), 2);
    console.log(`round ${round + 1}: p99 without reloads ${p(a.latencies)} ms, with ${b.reloads} reloads ${p(b.latencies)} ms`);
  }
  for (const c of [...conns, control]) c.close?.();
  await server.stop();
  steady.sort((x, y) => x - y);
  during.sort((x, y) => x - y);
  const rate = (l) => fmt(l.length / (ROUNDS * WINDOW_S), 0);
  console.log(`\nbench/reload (${MODE} mode, ${CLIENTS} clients, ${ROUNDS} rounds of ${WINDOW_S} s + ${WINDOW_S} s)`);
  console.log(`without reloads: ${steady.length} requests (${rate(steady)}/s), p50 ${fmt(percentile(steady, 50), 2)} ms, p99 ${fmt(percentile(steady, 99), 2)} ms`);
  console.log(`during reloads:  ${during.length} requests (${rate(during)}/s), p50 ${fmt(percentile(during, 50), 2)} ms, p99 ${fmt(percentile(during, 99), 2)} ms, ${reloads} reloads${failedLoads ? `, ${failedLoads} failed loads` : ''}`);
  console.log(`p99 ratio (during / without): ${fmt(percentile(during, 99) / percentile(steady, 99), 2)}x (target <= 2x)`);
  console.log(`failed requests: ${failures.length}; versions that answered: ${stamps.size}`);
  if (failures.length > 0) {
    console.log(failures.slice(0, 5).join('\n'));
    process.exitCode = 1;
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

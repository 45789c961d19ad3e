#!/usr/bin/env node
'use strict';
// bench/ensemble: what the ensemble scheduler adds to its steps, against a client that calls the
// same models itself, in one run against one Nereid server (HTTP JSON, one keep-alive connection
// shared by both sides, 1 in flight, the raw client of bench/sequence-batching with every fixed
// request encoded beforehand):
//   ensemble: POST add_sub_mul (add_sub -> mul, python models, FP32 [4]);
//   client chain: POST add_sub, then POST mul with its outputs (the client decodes and re-encodes).
// The steps' compute time comes from the server's statistics (compute_input + compute_infer +
// compute_output of add_sub and mul over the phase); each side's overhead is its mean latency per
// request minus that compute per request. Short rounds alternate the two sides; the headline is
// the median of the rounds' ratios (other work on a shared machine spoils whole rounds). Not a test.
// Usage: node bench/ensemble/run.js [requests per round=300] [rounds=10] [--client=raw|python]
//   (needs `npm run build` first). `--client=python`: both sides timed by python-client.py
//   (http.client + json, one keep-alive connection), the language of Triton's clients; its work
//   between the chain's two calls is what a Python client spends, not the raw client's minimum.
const readline = require('node:readline');
const { spawn } = require('node:child_process');
const os = require('node:os');
const path = require('node:path');
const { fmt } = require('../lib/util');
const { encodeRequest } = require('../sequence-batching/raw-client');
const { ensembleServer } = require('./repo');

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const CLIENT = (process.argv.find((a) => a.startsWith('--client=')) ?? '--client=raw').slice('--client='.length);
if (CLIENT !== 'raw' && CLIENT !== 'python') throw new Error(`--client must be raw or python, not ${CLIENT}`);
const N = Number(args[0] || 300);
const ROUNDS = Number(args[1] || 10);
const WARMUP = 200;
const TARGET_RATIO = 0.5;

/**
 * One request on the raw keep-alive connection (bench/sequence-batching/raw-client.js: the same
 * client for both sides, one read buffer, nothing but the status line and Content-Length parsed).
 * `bytes` is a request encoded beforehand, or a body string to encode now (the client chain's
 * second call, built from the first one's answer).
 */
async function request(conn, urlPath, bytes) {
  const r = typeof bytes === 'string' ? await conn.post(urlPath, bytes) : await conn.send(bytes);
  if (r.status !== 200) throw new Error(`HTTP ${r.status} from ${urlPath}: ${r.body.slice(0, 300)}`);
  return JSON.parse(r.body);
}

/** GET on a throwaway node:http request (statistics between phases, outside the timed part). */
async function getJson(port, urlPath) {
  const res = await fetch(`http://127.0.0.1:${port}${urlPath}`);
  if (res.status !== 200) throw new Error(`HTTP ${res.status} from ${urlPath}`);
  return res.json();
}

const fp32 = (name, data) => ({ name, datatype: 'FP32', shape: [4], data });
const A = [3, 4, 5, 6];
const B = [1, 2, 3, 4];
const EXPECTED = A.map((a, i) => a * a - B[i] * B[i]);
const ENSEMBLE_BODY = JSON.stringify({ inputs: [fp32('INPUT_A', A), fp32('INPUT_B', B)] });
const ADD_SUB_BODY = JSON.stringify({ inputs: [fp32('add_sub_input0', A), fp32('add_sub_input1', B)] });
const ENSEMBLE_PATH = '/v2/models/add_sub_mul/infer';
const ADD_SUB_PATH = '/v2/models/add_sub/infer';
const MUL_PATH = '/v2/models/mul/infer';

function check(out) {
  if (JSON.stringify(out) !== JSON.stringify(EXPECTED)) throw new Error(`wrong answer ${JSON.stringify(out)}`);
}

const outputOf = (res, name) => res.outputs.find((o) => o.name === name).data;

/** The two sides' fixed requests, encoded once (the chain's second request depends on the first's answer). */
function encodedRequests(port) {
  return { ensemble: encodeRequest(port, ENSEMBLE_PATH, ENSEMBLE_BODY), addSub: encodeRequest(port, ADD_SUB_PATH, ADD_SUB_BODY) };
}

async function viaEnsemble(conn, encoded) {
  const res = await request(conn, ENSEMBLE_PATH, encoded.ensemble);
  return outputOf(res, 'OUTPUT');
}

async function viaClient(conn, encoded) {
  const first = await request(conn, ADD_SUB_PATH, encoded.addSub);
  const body = JSON.stringify({
    inputs: [fp32('mul_input0', outputOf(first, 'added_output')), fp32('mul_input1', outputOf(first, 'subbed_output'))],
  });
  const second = await request(conn, MUL_PATH, body);
  return outputOf(second, 'mul_output');
}

/**
 * From the statistics so far: the composing models' compute ns (input + infer + output) and their
 * success ns (arrival to final response, in the server), and the ensemble's success ns.
 */
async function serverNs(port) {
  const out = { compute: 0, steps: 0, ensemble: 0 };
  for (const model of ['add_sub', 'mul', 'add_sub_mul']) {
    const s = (await getJson(port, `/v2/models/${model}/stats`)).model_stats[0].inference_stats;
    if (model === 'add_sub_mul') {
      out.ensemble += s.success.ns;
      continue;
    }
    out.compute += s.compute_input.ns + s.compute_infer.ns + s.compute_output.ns;
    out.steps += s.success.ns;
  }
  return out;
}

/** N calls of `fn` on the raw connection, timed here: their mean and p50 in µs. */
async function rawTimes(conn, encoded, fn) {
  const latencies = new Float64Array(N);
  for (let i = 0; i < N; i++) {
    const t = process.hrtime.bigint();
    await fn(conn, encoded);
    latencies[i] = Number(process.hrtime.bigint() - t) / 1000;
  }
  latencies.sort();
  return { mean: latencies.reduce((a, b) => a + b, 0) / N, p50: latencies[Math.floor(N / 2)] };
}

/** python-client.py on the server's port: `times(side)` runs N calls of `ensemble` or `chain` there. */
function pythonClient(port) {
  const child = spawn('python3', [path.join(__dirname, 'python-client.py'), String(port)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    async times(side) {
      child.stdin.write(`${side} ${N}\n`);
      const { value, done } = await lines.next();
      if (done) throw new Error(`python-client.py ended (exit ${child.exitCode})`);
      return JSON.parse(value);
    },
    close: () => child.kill(),
  };
}

/** One timed phase (`times` runs the N calls) with the server's statistics over it. */
async function phase(port, times) {
  const before = await serverNs(port);
  const { mean, p50 } = await times();
  const after = await serverNs(port);
  const perRequestUs = (k) => (after[k] - before[k]) / 1000 / N;
  // The ensemble's time in the server beyond its steps' own (arrival to final response): what the
  // ensemble scheduler itself adds (0 for the client chain).
  const own = perRequestUs('ensemble') > 0 ? perRequestUs('ensemble') - perRequestUs('steps') : 0;
  // Client latency outside the server's success time (HTTP both ways, client work between calls).
  const outside = mean - (own > 0 ? perRequestUs('ensemble') : perRequestUs('steps'));
  // The two steps' time in the server outside their compute (core path, scheduler, dispatch to the
  // stub and back): the same work on both sides. With it as 2s, the ensemble's own time as d and
  // the chain client's work between its calls as c, the ensemble's overhead is H + 2s + d against
  // the chain's 2H + 2s + c for one HTTP round trip H: the ratio is at most 0.5 only when
  // s + d <= c / 2, whatever H is.
  const stepsOutside = perRequestUs('steps') - perRequestUs('compute');
  return { mean, p50, compute: perRequestUs('compute'), own, outside, stepsOutside };
}

function row(label, r) {
  return `${label.padEnd(16)} mean ${fmt(r.mean).padStart(6)} µs   p50 ${fmt(r.p50).padStart(6)} µs   ` +
    `steps' compute ${fmt(r.compute).padStart(5)} µs   overhead ${fmt(r.mean - r.compute).padStart(6)} µs` +
    `   (outside the server ${fmt(r.outside)} µs, steps in the server outside their compute ${fmt(r.stepsOutside)} µs` +
    `${r.own ? `, ensemble beyond its steps in the server ${fmt(r.own)} µs` : ''})`;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  console.log(`bench/ensemble: ${os.cpus().length} cpus, node ${process.version}, ${ROUNDS} alternating rounds of ${N} ` +
    `sequential requests per side, HTTP JSON, keep-alive, loopback, ${CLIENT} client, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  // One keep-alive connection for both sides, as a client would use.
  const { server, conn, close } = await ensembleServer('nereid-ensemble-bench-');
  const encoded = encodedRequests(server.http);
  const python = CLIENT === 'python' ? pythonClient(server.http) : undefined;
  const times = python
    ? { ensemble: () => python.times('ensemble'), client: () => python.times('chain') }
    : { ensemble: () => rawTimes(conn, encoded, viaEnsemble), client: () => rawTimes(conn, encoded, viaClient) };
  try {
    await conn.ready;
    check(await viaEnsemble(conn, encoded));
    check(await viaClient(conn, encoded));
    for (let i = 0; i < WARMUP; i++) {
      await viaEnsemble(conn, encoded);
      await viaClient(conn, encoded);
    }
    if (python) {
      await python.times('ensemble');
      await python.times('chain');
    }
    const zero = () => ({ mean: 0, p50: 0, compute: 0, own: 0, outside: 0, stepsOutside: 0 });
    const totals = { ensemble: zero(), client: zero() };
    const ratios = [];
    const floors = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const e = await phase(server.http, times.ensemble);
      const c = await phase(server.http, times.client);
      console.log(row(`ensemble ${round}`, e));
      console.log(row(`client chain ${round}`, c));
      ratios.push((e.mean - e.compute) / (c.mean - c.compute));
      floors.push((e.mean - e.compute - e.own) / (c.mean - c.compute));
      console.log(`round ${round} ratio ${fmt(ratios[ratios.length - 1], 2)}x`);
      for (const k of ['mean', 'p50', 'compute', 'own', 'outside', 'stepsOutside']) {
        totals.ensemble[k] += e[k] / ROUNDS;
        totals.client[k] += c[k] / ROUNDS;
      }
    }
    const overheadE = totals.ensemble.mean - totals.ensemble.compute;
    const overheadC = totals.client.mean - totals.client.compute;
    const ratio = median(ratios);
    console.log('\nsummary (means over the rounds)');
    console.log(row('ensemble', totals.ensemble));
    console.log(row('client chain', totals.client));
    console.log(`ratio ensemble overhead / client chain overhead: ${fmt(ratio, 2)}x median of the rounds ` +
      `(${fmt(overheadE / overheadC, 2)}x of the means) (target <= ${TARGET_RATIO}x) ${ratio <= TARGET_RATIO ? 'OK' : 'MISSED'}`);
    // The same ratio with the ensemble scheduler's own time in the server taken out (as if it cost
    // nothing): what is left is one HTTP round trip and the steps' own time in the server outside
    // their compute, against two round trips, the same steps' time and the client's work between.
    console.log(`with the ensemble's own time in the server at zero: ${fmt(median(floors), 2)}x median of the rounds ` +
      `(${fmt((overheadE - totals.ensemble.own) / overheadC, 2)}x of the means)`);
  } finally {
    python?.close();
    await close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

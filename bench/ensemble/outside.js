#!/usr/bin/env node
'use strict';
// bench/ensemble/outside.js: where each HTTP call of bench/ensemble spends its time, one call
// kind at a time in the same minutes on one server: the ensemble, `add_sub` alone, `mul` alone
// (its request fixed beforehand) and the client chain, alternated in rounds on one raw keep-alive
// connection. For each kind: client latency, the called model's success time per request in the
// server (arrival in the core to final response, the statistics), what lies outside it (HTTP both
// ways, the client), the steps' compute, and the server process's CPU time per call
// and the python stubs' (/proc/<pid>/stat utime + stime). Not a test; a diagnostic for run.js.
// Usage: node bench/ensemble/outside.js [requests per round=300] [rounds=6] [--gap=µs]
//   --gap: the client spins that long between an answer and its next request (not timed), to see
//   whether work the server does after writing an answer delays the next request.
const fs = require('node:fs');
const os = require('node:os');
const { execFileSync } = require('node:child_process');
const { fmt } = require('../lib/util');
const { encodeRequest } = require('../sequence-batching/raw-client');
const { ensembleServer } = require('./repo');

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const GAP_US = Number((process.argv.find((a) => a.startsWith('--gap=')) ?? '--gap=0').slice('--gap='.length));
const N = Number(args[0] || 300);
const ROUNDS = Number(args[1] || 6);
const WARMUP = 300;

const fp32 = (name, data) => ({ name, datatype: 'FP32', shape: [4], data });
const A = [3, 4, 5, 6];
const B = [1, 2, 3, 4];
const SUM = A.map((a, i) => a + B[i]);
const DIFF = A.map((a, i) => a - B[i]);
const BODIES = {
  ensemble: ['/v2/models/add_sub_mul/infer', JSON.stringify({ inputs: [fp32('INPUT_A', A), fp32('INPUT_B', B)] })],
  add_sub: ['/v2/models/add_sub/infer', JSON.stringify({ inputs: [fp32('add_sub_input0', A), fp32('add_sub_input1', B)] })],
  mul: ['/v2/models/mul/infer', JSON.stringify({ inputs: [fp32('mul_input0', SUM), fp32('mul_input1', DIFF)] })],
};
/** The model whose success time is the call's time in the server (the chain: both steps'). */
const CALLED = { ensemble: ['add_sub_mul'], add_sub: ['add_sub'], mul: ['mul'], chain: ['add_sub', 'mul'] };

/** The node process serving (bin/nereid is a shell script that execs it, or its child). */
function serverPid(child) {
  const comm = fs.readFileSync(`/proc/${child.pid}/comm`, 'utf8').trim();
  if (comm === 'node') return child.pid;
  const kids = execFileSync('pgrep', ['-P', String(child.pid)]).toString().trim().split('\n');
  return Number(kids[0]);
}

const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

/** utime + stime of a process in µs (clock ticks: 10 ms each, so only the mean over many calls means anything). */
function cpuUs(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1e6) / CLK_TCK;
}

async function stats(port) {
  const out = {};
  for (const model of ['add_sub', 'mul', 'add_sub_mul']) {
    const s = (await (await fetch(`http://127.0.0.1:${port}/v2/models/${model}/stats`)).json()).model_stats[0].inference_stats;
    out[model] = { success: s.success.ns, compute: s.compute_input.ns + s.compute_infer.ns + s.compute_output.ns };
  }
  return out;
}

function spin(us) {
  if (us <= 0) return;
  const until = process.hrtime.bigint() + BigInt(Math.round(us * 1000));
  while (process.hrtime.bigint() < until);
}

async function call(conn, encoded, kind) {
  if (kind !== 'chain') {
    const r = await conn.send(encoded[kind]);
    if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${r.body}`);
    return;
  }
  const first = JSON.parse((await conn.send(encoded.add_sub)).body);
  const out = (n) => first.outputs.find((o) => o.name === n).data;
  const r = await conn.post(BODIES.mul[0], JSON.stringify({ inputs: [fp32('mul_input0', out('added_output')), fp32('mul_input1', out('subbed_output'))] }));
  if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${r.body}`);
}

/** The python stubs: the server's children. */
function childPids(pid) {
  return execFileSync('pgrep', ['-P', String(pid)]).toString().trim().split('\n').map(Number);
}

async function phase(conn, encoded, port, pid, kind) {
  const before = await stats(port);
  const stubs = childPids(pid);
  const stubCpu = () => stubs.reduce((sum, p) => sum + cpuUs(p), 0);
  const cpu0 = cpuUs(pid);
  const stub0 = stubCpu();
  let total = 0;
  for (let i = 0; i < N; i++) {
    const t = process.hrtime.bigint();
    await call(conn, encoded, kind);
    total += Number(process.hrtime.bigint() - t) / 1000;
    spin(GAP_US);
  }
  const cpu = (cpuUs(pid) - cpu0) / N;
  const stubsCpu = (stubCpu() - stub0) / N;
  const after = await stats(port);
  const per = (model, k) => (after[model][k] - before[model][k]) / 1000 / N;
  const success = CALLED[kind].reduce((s, m) => s + per(m, 'success'), 0);
  const compute = per('add_sub', 'compute') + per('mul', 'compute');
  return { latency: total / N, success, outside: total / N - success, compute, cpu, stubsCpu };
}

async function main() {
  console.log(`bench/ensemble/outside: ${os.cpus().length} cpus, node ${process.version}, ${ROUNDS} rounds of ${N} calls per kind, ` +
    `gap ${GAP_US} µs, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  const { server, conn, close } = await ensembleServer('nereid-ensemble-outside-');
  const pid = serverPid(server.child);
  const encoded = Object.fromEntries(Object.entries(BODIES).map(([k, [p, b]]) => [k, encodeRequest(server.http, p, b)]));
  const kinds = ['ensemble', 'add_sub', 'mul', 'chain'];
  const sums = Object.fromEntries(kinds.map((k) => [k, { latency: 0, success: 0, outside: 0, compute: 0, cpu: 0, stubsCpu: 0 }]));
  try {
    await conn.ready;
    for (let i = 0; i < WARMUP; i++) for (const k of kinds) await call(conn, encoded, k);
    for (let round = 0; round < ROUNDS; round++) {
      for (const k of kinds) {
        const r = await phase(conn, encoded, server.http, pid, k);
        for (const f of Object.keys(r)) sums[k][f] += r[f] / ROUNDS;
      }
    }
    console.log(`load average after ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    for (const k of kinds) {
      const s = sums[k];
      console.log(`${k.padEnd(9)} latency ${fmt(s.latency).padStart(6)} µs  success in the server ${fmt(s.success).padStart(6)} µs  ` +
        `outside it ${fmt(s.outside).padStart(6)} µs  steps' compute ${fmt(s.compute).padStart(6)} µs  overhead ${fmt(s.latency - s.compute).padStart(6)} µs  ` +
        `CPU per call: server ${fmt(s.cpu).padStart(6)} µs, stubs ${fmt(s.stubsCpu).padStart(6)} µs`);
    }
  } finally {
    await close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

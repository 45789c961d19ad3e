#!/usr/bin/env node
'use strict';
// Does returning memory after bursts (IdleCollector's full collection + native/malloc-trim) cost the
// large-tensor paths anything? Server CPU per request (utime+stime from /proc/<pid>/stat) and minor
// faults per request, for a 4 MiB binary tensor (4 in flight, bench/http-infer's case) and a 16 MiB
// tensor in client shared memory (bench/shared-memory's case), through identity_fp32, against the
// same build started without native/malloc-trim (NEREID_NATIVE_OFF=malloc-trim; the other native
// helpers load in both) and with it, alternately.
// A trim that ran under load would hand the allocator's cached buffers back and fault them in again.
//
//   node bench/attack-load/tensor-cpu.js [rounds=3] [requests per run=60]   (npm run build first)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { ROOT, startNereid, fmt } = require('../lib/util');

const ROUNDS = Number(process.argv[2] || 3);
const TOTAL = Number(process.argv[3] || 60);

/** utime + stime (ms) and minor faults of a process so far. */
function usage(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  // After "pid (comm) ": state is field 0 here; minflt 7, utime 11, stime 12 (proc(5) fields 10, 14, 15).
  const tick = 1000 / 100;
  return { cpuMs: (Number(f[11]) + Number(f[12])) * tick, minflt: Number(f[7]) };
}

/** CLOCK_MONOTONIC in seconds: the measured windows, to match against `perf record -k mono` (RESULTS.md). */
function monotonicS() {
  return Number(process.hrtime.bigint()) / 1e9;
}

function child(script, args) {
  const r = spawnSync(process.execPath, [script, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) throw new Error(`${path.basename(script)} failed (${r.status})`);
  return JSON.parse(r.stdout);
}

const CASES = {
  'binary 4 MiB x4': (port) => child(path.join(ROOT, 'bench/http-infer/big-tensor.js'), [String(port), '/v2/models/identity_fp32/infer', String(1 << 20), '4', String(TOTAL), 'binary']),
  'shm 16 MiB x1': (port) => child(path.join(ROOT, 'bench/shared-memory/shm-client.js'), [String(port), String(4 << 20), '1', String(TOTAL)]),
};

async function measure(repo, native) {
  if (native) delete process.env.NEREID_NATIVE_OFF;
  else process.env.NEREID_NATIVE_OFF = 'malloc-trim';
  const nereid = await startNereid(repo, ['--allow-client-shm=true', '--http-max-input-size', String(64 << 20)]);
  delete process.env.NEREID_NATIVE_OFF;
  const out = {};
  try {
    for (const [name, run] of Object.entries(CASES)) {
      run(nereid.http); // warm-up: the allocator's heap and the model's buffers
      const before = usage(nereid.child.pid);
      const from = monotonicS();
      run(nereid.http);
      const after = usage(nereid.child.pid);
      out[name] = { cpuMs: (after.cpuMs - before.cpuMs) / TOTAL, faults: (after.minflt - before.minflt) / TOTAL, pid: nereid.child.pid, window: [from, monotonicS()] };
    }
  } finally {
    await nereid.stop();
  }
  return out;
}

async function main() {
  console.log(`bench/attack-load/tensor-cpu: identity_fp32, ${TOTAL} requests per case, ${ROUNDS} rounds, ${os.cpus().length} cpus, load ${os.loadavg().map((l) => fmt(l, 1)).join(' ')}`);
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-trim-'));
  fs.cpSync(path.join(ROOT, 'test/fixtures/onnx/identity_fp32'), path.join(repo, 'identity_fp32'), { recursive: true });
  const sums = { without: {}, with: {} };
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const key of ['without', 'with']) {
        const r = await measure(repo, key === 'with');
        for (const [name, v] of Object.entries(r)) {
          (sums[key][name] ??= []).push(v);
          console.log(`round ${round} ${key.padEnd(7)} malloc-trim  ${name.padEnd(16)} ${fmt(v.cpuMs, 2).padStart(7)} ms CPU/request  ${fmt(v.faults, 0).padStart(6)} minor faults/request  (pid ${v.pid}, ${fmt(v.window[0], 3)}-${fmt(v.window[1], 3)} s monotonic)`);
        }
      }
    }
  } finally {
    fs.rmSync(repo, { recursive: true, force: true });
  }
  const mean = (xs, k) => xs.reduce((a, x) => a + x[k], 0) / xs.length;
  console.log(`\nload ${os.loadavg().map((l) => fmt(l, 1)).join(' ')}`);
  for (const name of Object.keys(CASES)) {
    const w = sums.without[name];
    const n = sums.with[name];
    console.log(`${name.padEnd(16)} without ${fmt(mean(w, 'cpuMs'), 2)} ms, with ${fmt(mean(n, 'cpuMs'), 2)} ms CPU/request: ` +
      `${fmt(mean(n, 'cpuMs') / mean(w, 'cpuMs'), 2)}x; faults ${fmt(mean(w, 'faults'), 0)} / ${fmt(mean(n, 'faults'), 0)}`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

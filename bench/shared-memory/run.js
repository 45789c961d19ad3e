#!/usr/bin/env node
'use strict';
// bench/shared-memory: a 16 MB FP32 tensor through the identity_fp32 model (test/fixtures/onnx),
// in one run against one Nereid (`--allow-client-shm=true`):
//   - binary: the binary tensor extension, input in the request body and output in the response
//     (bench/http-infer/big-tensor.js's raw-socket client, in a fresh process);
//   - shm: input and output in client system shared memory regions, the request and response a few
//     hundred bytes of JSON (shm-client.js, in a fresh process), input written once as
//     perf_analyzer --shared-memory=system does;
//   - shm+touch: the same, the client also writing the input into its region and reading the output
//     back on every request.
// Rounds alternate the three so that the machine's background load falls on all of them; the sums
// are compared. Prints payload GB/s (input + output bytes), requests/s, p50, the server's CPU per
// request (utime + stime from /proc, warm-up requests included), and the ratios.
// The server maps regions when native/shm-map is built; NEREID_NATIVE=0 runs it with pread/pwrite.
// Usage: node bench/shared-memory/run.js [rounds=3] [requests per round=40] [concurrency=1]
//        (needs `npm run build` first)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { ROOT, startNereid, fmt } = require('../lib/util');

const ROUNDS = Number(process.argv[2] || 3);
const TOTAL = Number(process.argv[3] || 40);
const CONCURRENCY = Number(process.argv[4] || 1);
const ELEMENTS = 4 << 20; // 4M FP32 = 16 MiB

/** The server's CPU time so far, ms (utime + stime, /proc/<pid>/stat, clock ticks of 10 ms). */
function cpuMs(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function child(script, args) {
  const r = spawnSync(process.execPath, [script, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) throw new Error(`${path.basename(script)} failed (${r.status})`);
  return JSON.parse(r.stdout);
}

async function main() {
  console.log(`bench/shared-memory: identity_fp32, ${ELEMENTS} FP32 elements (${ELEMENTS * 4 / 2 ** 20} MiB) in and out, ` +
    `${CONCURRENCY} in flight, ${TOTAL} requests x ${ROUNDS} rounds per path, ${os.cpus().length} cpus (shared with other work), node ${process.version}`);
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-shm-'));
  fs.cpSync(path.join(ROOT, 'test/fixtures/onnx/identity_fp32'), path.join(repo, 'identity_fp32'), { recursive: true });
  const nereid = await startNereid(repo, ['--allow-client-shm=true', '--http-max-input-size', String(64 << 20)]);
  const paths = {
    binary: () => child(path.join(ROOT, 'bench/http-infer/big-tensor.js'),
      [String(nereid.http), '/v2/models/identity_fp32/infer', String(ELEMENTS), String(CONCURRENCY), String(TOTAL), 'binary']),
    shm: () => child(path.join(__dirname, 'shm-client.js'), [String(nereid.http), String(ELEMENTS), String(CONCURRENCY), String(TOTAL)]),
    'shm+touch': () => child(path.join(__dirname, 'shm-client.js'), [String(nereid.http), String(ELEMENTS), String(CONCURRENCY), String(TOTAL), '--touch']),
  };
  const sums = Object.fromEntries(Object.keys(paths).map((k) => [k, { rps: 0, gbps: 0, p50: [], cpu: 0 }]));
  const native = process.env.NEREID_NATIVE === '0' ? 'off (NEREID_NATIVE=0: pread/pwrite)' : 'as built (native/shm-map maps regions when built)';
  console.log(`server: native helpers ${native}; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const line = [];
      for (const [name, run] of Object.entries(paths)) {
        const cpu0 = cpuMs(nereid.child.pid);
        const r = run();
        sums[name].cpu += cpuMs(nereid.child.pid) - cpu0;
        sums[name].rps += r.rps;
        sums[name].gbps += r.gbps;
        sums[name].p50.push(r.p50);
        line.push(`${name} ${fmt(r.rps, 1)} req/s`);
      }
      console.log(`round ${round}: ${line.join('   ')}`);
    }
  } finally {
    await nereid.stop();
    fs.rmSync(repo, { recursive: true, force: true });
  }
  console.log('');
  for (const [name, s] of Object.entries(sums)) {
    const p50 = s.p50.sort((a, b) => a - b)[Math.floor(s.p50.length / 2)];
    const cpu = s.cpu / (ROUNDS * (TOTAL + CONCURRENCY));
    console.log(`${name.padEnd(10)} ${fmt(s.rps / ROUNDS, 1).padStart(6)} req/s   ${fmt(s.gbps / ROUNDS, 2)} GB/s payload   p50 ${fmt(p50, 1)} ms   server CPU ${fmt(cpu, 1)} ms/req`);
  }
  console.log(`load average at the end ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  console.log(`\nshared memory / binary HTTP: ${fmt(sums.shm.rps / sums.binary.rps, 2)}x throughput ` +
    `(client touching its regions every request: ${fmt(sums['shm+touch'].rps / sums.binary.rps, 2)}x)`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

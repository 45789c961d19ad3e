#!/usr/bin/env node
'use strict';
// bench/shared-memory/native-ab.js: the shared-memory path with regions mapped (native/shm-map)
// against the same build with pread/pwrite (NEREID_NATIVE=0), in one run. Two servers of the same
// dist/, both serving identity_fp32 (16 MiB FP32 in and out); rounds alternate between them (and
// between the two binary-HTTP baselines) so that the machine's background load falls on both. For
// each: requests/s, p50 and the server's CPU per request (utime + stime from /proc/<pid>/stat, the
// warm-up request included) — CPU per request is the figure that survives a busy machine.
// Usage: node bench/shared-memory/native-ab.js [rounds=4] [requests per round=40] [--binary]
//        (--binary: also the binary HTTP path against each server, for the shm / binary ratio)
//        (needs `npm run build` with a C toolchain, so that native/shm-map is built)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { ROOT, startNereid, fmt } = require('../lib/util');

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const ROUNDS = Number(args[0] || 4);
const TOTAL = Number(args[1] || 40);
const BINARY = process.argv.includes('--binary');
const ELEMENTS = 4 << 20;

function cpuMs(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function child(script, childArgs) {
  const r = spawnSync(process.execPath, [script, ...childArgs], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) throw new Error(`${path.basename(script)} failed (${r.status})`);
  return JSON.parse(r.stdout);
}

async function server(repo, native) {
  const saved = process.env.NEREID_NATIVE;
  if (native) delete process.env.NEREID_NATIVE;
  else process.env.NEREID_NATIVE = '0';
  try {
    return await startNereid(repo, ['--allow-client-shm=true', '--http-max-input-size', String(64 << 20)]);
  } finally {
    if (saved === undefined) delete process.env.NEREID_NATIVE;
    else process.env.NEREID_NATIVE = saved;
  }
}

const load = () => os.loadavg().map((l) => l.toFixed(1)).join(' ');

async function main() {
  console.log(`bench/shared-memory/native-ab: identity_fp32, 16 MiB FP32 in and out, 1 in flight, ${TOTAL} requests x ${ROUNDS} rounds per arm, ` +
    `${os.cpus().length} cpus, node ${process.version}; load average ${load()}`);
  if (!fs.existsSync(path.join(ROOT, 'native/shm-map/build/Release/shm_map.node'))) {
    throw new Error('native/shm-map is not built (npm run build with a C toolchain)');
  }
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-shm-ab-'));
  fs.cpSync(path.join(ROOT, 'test/fixtures/onnx/identity_fp32'), path.join(repo, 'identity_fp32'), { recursive: true });
  const servers = { mapped: await server(repo, true), pread: await server(repo, false) };
  const arms = [];
  for (const [name, s] of Object.entries(servers)) {
    arms.push({ name: `shm ${name}`, server: s, run: () => child(path.join(__dirname, 'shm-client.js'), [String(s.http), String(ELEMENTS), '1', String(TOTAL)]) });
    if (BINARY) {
      arms.push({
        name: `binary (${name} server)`,
        server: s,
        run: () => child(path.join(ROOT, 'bench/http-infer/big-tensor.js'),
          [String(s.http), '/v2/models/identity_fp32/infer', String(ELEMENTS), '1', String(TOTAL), 'binary']),
      });
    }
  }
  const sums = new Map(arms.map((a) => [a.name, { rps: 0, cpu: 0, p50: [] }]));
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      // Alternate the order too: the first arm of a round is not always the same.
      const order = round % 2 === 1 ? arms : [...arms].reverse();
      const line = [];
      for (const arm of order) {
        const c0 = cpuMs(arm.server.child.pid);
        const r = arm.run();
        const s = sums.get(arm.name);
        s.cpu += cpuMs(arm.server.child.pid) - c0;
        s.rps += r.rps;
        s.p50.push(r.p50);
        line.push(`${arm.name} ${fmt(r.rps, 1)} req/s`);
      }
      console.log(`round ${round} (load ${load()}): ${line.join('   ')}`);
    }
  } finally {
    for (const s of Object.values(servers)) await s.stop();
    fs.rmSync(repo, { recursive: true, force: true });
  }
  console.log('');
  const per = (name) => {
    const s = sums.get(name);
    return { rps: s.rps / ROUNDS, cpu: s.cpu / (ROUNDS * (TOTAL + 1)), p50: s.p50.sort((a, b) => a - b)[Math.floor(s.p50.length / 2)] };
  };
  for (const arm of arms) {
    const p = per(arm.name);
    console.log(`${arm.name.padEnd(22)} ${fmt(p.rps, 1).padStart(6)} req/s   p50 ${fmt(p.p50, 1)} ms   server CPU ${fmt(p.cpu, 2)} ms/req`);
  }
  const m = per('shm mapped');
  const p = per('shm pread');
  console.log(`\nmapped / pread: ${fmt(m.rps / p.rps, 2)}x throughput, server CPU per request ${fmt(m.cpu / p.cpu, 2)}x`);
  if (BINARY) {
    console.log(`shm / binary (same server): mapped ${fmt(m.rps / per('binary (mapped server)').rps, 2)}x, ` +
      `pread ${fmt(p.rps / per('binary (pread server)').rps, 2)}x`);
  }
  console.log(`load average at the end ${load()}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

#!/usr/bin/env node
'use strict';
// bench/python-backend/bridge.js: the server <-> stub bridge alone, in one process, no HTTP.
//   a. small tensors: round trip of one execute through a PythonModelInstance (INT32 [1,16] sum and
//      difference) against the floor of the same transport: a bare python3 echo loop answering a
//      frame of the same size over the same kind of inherited socket;
//   b. 16 MiB FP32 through a pass-through model (output = input, goes back by reference) and through
//      a model that copies it (output travels back through a shared-memory file), against a memory
//      ceiling: copying the same bytes twice into fresh buffers in Node.
//   The small round trips also report CPU time per round trip on each side: the server (this
//   process, process.cpuUsage, includes the test harness around the instance) and the stub
//   (/proc/<pid>/task/*/schedstat), which, unlike wall-clock latency, hardly moves with other load.
// Usage: node bench/python-backend/bridge.js [small round trips=3000]   (needs `npm run build`)
//   BRIDGE_PROFILE=<file.pstats> runs the small-tensor stub under cProfile (stub_profile.py) and
//   writes its stats there (read them with `python3 -m pstats <file>`); timings are then inflated.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ROOT, fmt } = require('../lib/util');
const { processCpuNs } = require('./cpu');
const { SUM_MODEL } = require('./models');

const DIST = path.join(ROOT, 'dist/libs/backends/src/python');
const N = Number(process.argv[2] || 3000);
const BIG_ELEMS = 4 << 20;
const BIG_ITERS = 20;
// Round trips before measuring: V8 optimizes the server's side meanwhile (a server runs warm).
const WARMUP = 2000;

const COPY_MODEL = `import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", r.inputs()[0].as_numpy().copy())]) for r in requests]
`;

// Reads length-prefixed frames on fd 3 and writes each one back unchanged.
const ECHO = `import os, struct
fd = 3
buf = b""
while True:
    while len(buf) < 4:
        chunk = os.read(fd, 65536)
        if not chunk:
            raise SystemExit(0)
        buf += chunk
    (n,) = struct.unpack_from("<I", buf)
    while len(buf) < 4 + n:
        buf += os.read(fd, 65536)
    os.write(fd, buf[:4 + n])
    buf = buf[4 + n:]
`;

/** A python "interpreter" that runs the stub under cProfile (see stub_profile.py). */
function profilingPython(dir, out) {
  const wrapper = path.join(dir, 'python-profiled');
  fs.writeFileSync(wrapper, `#!/bin/sh\nexec python3 ${JSON.stringify(path.join(__dirname, 'stub_profile.py'))} ${JSON.stringify(path.resolve(out))} "$@"\n`, { mode: 0o755 });
  return wrapper;
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

function makeRepo() {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bridge-'));
  for (const [name, source] of [['py_sum', SUM_MODEL], ['py_copy', COPY_MODEL]]) {
    fs.mkdirSync(path.join(repo, name, '1'), { recursive: true });
    fs.writeFileSync(path.join(repo, name, '1', 'model.py'), source);
  }
  fs.cpSync(path.join(ROOT, 'test/fixtures/python/identity'), path.join(repo, 'identity'), { recursive: true });
  return repo;
}

/** Round trips of a `bytes`-long frame through a python3 echo loop on fd 3 (p50/p99 µs). */
async function transportFloor(bytes, count) {
  const child = spawn('python3', ['-c', ECHO], { stdio: ['ignore', 'inherit', 'inherit', 'pipe'] });
  const sock = child.stdio[3];
  const frame = Buffer.alloc(4 + bytes);
  frame.writeUInt32LE(bytes, 0);
  let pending;
  let have = 0;
  sock.on('data', (c) => {
    have += c.length;
    if (have >= frame.length) {
      have -= frame.length;
      pending();
    }
  });
  const lat = [];
  let cpu0;
  let childCpu0 = 0;
  for (let i = 0; i < count + WARMUP; i++) {
    if (i === WARMUP) {
      cpu0 = process.cpuUsage();
      childCpu0 = processCpuNs(child.pid);
    }
    const t = process.hrtime.bigint();
    await new Promise((resolve) => {
      pending = resolve;
      sock.write(frame);
    });
    if (i >= WARMUP) lat.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  const cpu = process.cpuUsage(cpu0);
  const childCpuUs = (processCpuNs(child.pid) - childCpu0) / 1000 / count;
  child.kill();
  lat.sort((a, b) => a - b);
  return { p50: percentile(lat, 50), p99: percentile(lat, 99), serverCpuUs: (cpu.user + cpu.system) / count, childCpuUs };
}

async function main() {
  const T = require(path.join(DIST, 'testing.js'));
  const { PythonBackend } = require(path.join(DIST, 'python-backend.js'));
  const repo = makeRepo();
  const profile = process.env.BRIDGE_PROFILE;
  const backend = new PythonBackend();
  const smallBackend = profile ? new PythonBackend({ pythonExecutable: profilingPython(repo, profile) }) : backend;
  const io = (name, type, dims) => [name, type, dims];
  console.log(`bench/python-backend/bridge: ${os.cpus().length} cpus, node ${process.version}, ${N} small round trips, ${BIG_ITERS} x 16 MiB`);

  const sumCfg = T.config('py_sum', [io('INPUT0', 'TYPE_INT32', [1, 16]), io('INPUT1', 'TYPE_INT32', [1, 16])],
    [io('OUTPUT0', 'TYPE_INT32', [1, 16]), io('OUTPUT1', 'TYPE_INT32', [1, 16])]);
  const sum = await smallBackend.loadInstance(T.loadContext(repo, sumCfg));
  const stubPid = sum.proc.pid;
  const a = Array.from({ length: 16 }, (_, i) => i);
  const lat = [];
  let cpu0;
  let stubCpu0 = 0;
  for (let i = 0; i < N + WARMUP; i++) {
    if (i === WARMUP) {
      cpu0 = process.cpuUsage();
      stubCpu0 = processCpuNs(stubPid);
    }
    const t = process.hrtime.bigint();
    const [s] = await T.run(sum, [T.request('py_sum', [T.i32('INPUT0', a, [1, 16]), T.i32('INPUT1', a, [1, 16])])]);
    if (s.error) throw s.error;
    if (i >= WARMUP) lat.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  const cpu = process.cpuUsage(cpu0);
  const serverCpuUs = (cpu.user + cpu.system) / N;
  const stubCpuUs = (processCpuNs(stubPid) - stubCpu0) / 1000 / N;
  await sum.unload();
  lat.sort((x, y) => x - y);
  // the EXECUTE frame of this request is ~330 bytes; its answer is about the same
  const floor = await transportFloor(330, N);

  const big = new Float32Array(BIG_ELEMS).map((_, i) => i % 1000);
  const bigRuns = {};
  for (const name of ['identity', 'py_copy']) {
    const inst = await backend.loadInstance(T.loadContext(repo, T.config(name, [io('INPUT0', 'TYPE_FP32', [-1])], [io('OUTPUT0', 'TYPE_FP32', [-1])])));
    const times = [];
    for (let i = 0; i < BIG_ITERS + 2; i++) {
      const t = process.hrtime.bigint();
      const [s] = await T.run(inst, [T.request(name, [{ name: 'INPUT0', datatype: 'FP32', shape: [BIG_ELEMS], data: big }])]);
      if (s.error) throw s.error;
      const out = s.output('OUTPUT0').data;
      if (i === 0 && Buffer.compare(Buffer.from(out.buffer, out.byteOffset, out.byteLength), Buffer.from(big.buffer)) !== 0) {
        throw new Error(`${name} returned different bytes`);
      }
      if (i >= 2) times.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    await inst.unload();
    times.sort((x, y) => x - y);
    bigRuns[name] = percentile(times, 50);
  }
  const copies = [];
  const src = Buffer.from(big.buffer);
  for (let i = 0; i < BIG_ITERS; i++) {
    const t = process.hrtime.bigint();
    const one = Buffer.allocUnsafeSlow(src.length);
    src.copy(one);
    const two = Buffer.allocUnsafeSlow(src.length);
    one.copy(two);
    copies.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  copies.sort((x, y) => x - y);
  const memcpyMs = percentile(copies, 50);
  fs.rmSync(repo, { recursive: true, force: true });

  const gbps = (ms) => (2 * big.byteLength) / (ms / 1000) / 1e9;
  console.log('\nsmall tensors (INT32 [1,16] x2 in, x2 out), one execute per round trip');
  console.log(`  python instance round trip     p50 ${fmt(percentile(lat, 50)).padStart(5)} µs   p99 ${fmt(percentile(lat, 99)).padStart(5)} µs`);
  console.log(`  bare python3 echo, same socket p50 ${fmt(floor.p50).padStart(5)} µs   p99 ${fmt(floor.p99).padStart(5)} µs   (transport floor)`);
  console.log(`  bridge above the floor         p50 ${fmt(percentile(lat, 50) - floor.p50).padStart(5)} µs   (decode, pb_utils objects, the model's numpy work, encode, both sides)`);
  console.log(`  CPU per round trip             server ${fmt(serverCpuUs).padStart(4)} µs (with the harness)   stub ${fmt(stubCpuUs).padStart(4)} µs`);
  console.log(`  CPU per echo round trip        server ${fmt(floor.serverCpuUs).padStart(4)} µs                    echo ${fmt(floor.childCpuUs).padStart(4)} µs`);
  console.log('\n16 MiB FP32 in and out (payload counted twice)');
  console.log(`  pass-through model (identity)  ${fmt(gbps(bigRuns.identity), 2).padStart(5)} GB/s   p50 ${fmt(bigRuns.identity, 1)} ms`);
  console.log(`  copying model (py_copy)        ${fmt(gbps(bigRuns.py_copy), 2).padStart(5)} GB/s   p50 ${fmt(bigRuns.py_copy, 1)} ms`);
  console.log(`  two fresh copies in Node       ${fmt(gbps(memcpyMs), 2).padStart(5)} GB/s   p50 ${fmt(memcpyMs, 1)} ms   (memory ceiling)`);
  console.log(`  ratio copying model / ceiling  ${fmt(bigRuns.py_copy ? memcpyMs / bigRuns.py_copy : 0, 2)}x`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

'use strict';
// Helpers of bench/distributed: a private redis-server, a process's CPU time, stopping processes.
const fs = require('node:fs');
const net = require('node:net');
const { spawn } = require('node:child_process');
const { freePort, stop } = require('../lib/util');

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ, 100 on Linux). */
const TICKS = 100;

/** CPU milliseconds (user + system) the process `pid` has used so far; NaN where /proc cannot say. */
function cpuMs(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: count the fields after its closing parenthesis.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / TICKS;
  } catch {
    return NaN;
  }
}

/** Answers once something accepts connections on `port`. */
async function waitForPort(port, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.end();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A private redis-server on a free loopback port (no persistence). */
async function startRedis() {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  await new Promise((resolve, reject) => {
    child.once('error', (e) => reject(new Error(`cannot start redis-server (${e.message}); apt-get install redis-server`)));
    waitForPort(port).then(resolve, reject);
  });
  return { url: `redis://127.0.0.1:${port}`, child, stop: () => stop(child) };
}

/** Stops the processes, the last started first. */
async function stopAll(procs) {
  for (const p of [...procs].reverse()) await p.stop();
}

module.exports = { cpuMs, startRedis, stopAll };

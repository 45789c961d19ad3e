'use strict';
// Shared helpers for the benchmarks: free ports, child servers, waiting for readiness.
const { spawn } = require('node:child_process');
const net = require('node:net');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '../..');
const MAIN = path.join(ROOT, 'dist/apps/nereid/src/main.js');
/** How `npm start`, the package's bin and the image start Nereid (allocator tuned, then node). */
const BIN = path.join(ROOT, 'bin/nereid');

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitFor(url, timeoutMs = 30000) {
  const start = Date.now();
  while (Date.now() - start < timeoutMs) {
    const ok = await fetch(url).then((r) => r.status === 200, () => false);
    if (ok) return Date.now() - start;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${url}`);
}

/** Starts the built Nereid CLI on free loopback ports. */
async function startNereid(repo, extra = []) {
  const http = await freePort();
  const grpc = await freePort();
  const metrics = await freePort();
  const started = Date.now();
  const child = spawn(BIN, ['serve', '--model-repository', repo, '--http-port', String(http),
    '--grpc-port', String(grpc), '--metrics-port', String(metrics), '--http-address', '127.0.0.1',
    '--grpc-address', '127.0.0.1', '--log-info=false', ...extra], { stdio: ['ignore', 'inherit', 'inherit'] });
  try {
    await waitFor(`http://127.0.0.1:${http}/v2/health/ready`);
  } catch (e) {
    // Never ready (a model failed to load, say): the server must not outlive the benchmark.
    await stop(child);
    throw e;
  }
  return { child, http, grpc, metrics, readyMs: Date.now() - started, stop: () => stop(child) };
}

function stop(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', resolve);
    child.kill('SIGTERM');
  });
}

/** Starts a plain Node script as a server; it prints its port on the first stdout line. */
function startScript(script, args = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    child.once('error', reject);
    child.stdout.once('data', (d) => resolve({ child, port: Number(String(d).trim()), stop: () => stop(child) }));
  });
}

/** The JSON body of one request to `simple` (INPUT0 = INPUT1 = 0..15, shape [1, 16]). */
function simpleBody() {
  const a = Array.from({ length: 16 }, (_, i) => i);
  return JSON.stringify({
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: a },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: a },
    ],
  });
}

/** POSTs `body` (JSON) to `url` from `connections` autocannon clients for `duration` seconds; resolves with autocannon's result. */
function postLoad(url, body, { connections, duration, headers = {} }) {
  const autocannon = require('autocannon');
  return new Promise((resolve, reject) => {
    autocannon({ url, method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, connections, duration },
      (err, r) => (err ? reject(err) : resolve(r)));
  });
}

function fmt(n, digits = 0) {
  return Number(n).toFixed(digits);
}

module.exports = { ROOT, MAIN, BIN, freePort, waitFor, startNereid, startScript, stop, simpleBody, postLoad, fmt };

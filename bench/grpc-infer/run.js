#!/usr/bin/env node
'use strict';
/**
 * gRPC ModelInfer benchmark: Nereid (embedded mode, child process) against a bare grpc-js +
 * onnxruntime-node server doing the same work (baseline-server.js), measured in one run on
 * loopback with the same client: `concurrency` calls in flight for `seconds` per round, rounds
 * alternating baseline/Nereid. Prints throughput, p50/p99 and the Nereid/baseline ratio.
 *
 *   node bench/grpc-infer/run.js [--seconds 10] [--concurrency 16] [--rounds 2]
 *                                [--session-thread worker|event_loop] [--nest]
 *
 * `--nest` adds a third server: the same Nereid core with ModelInfer served through
 * @nestjs/microservices (Transport.GRPC) instead of grpc-js directly (bench/grpc-infer/nest-front.ts),
 * to compare the two ways of serving gRPC that the issue allowed.
 *
 * `--session-thread` runs Nereid on a copy of models/simple whose config sets the onnxruntime
 * backend's `session_thread` parameter (default: whatever models/simple/config.pbtxt says).
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { fork } = require('node:child_process');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const root = path.resolve(__dirname, '../..');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const SECONDS = Number(arg('seconds', 10));
const CONCURRENCY = Number(arg('concurrency', 16));
const ROUNDS = Number(arg('rounds', 2));
const SESSION_THREAD = arg('session-thread', undefined);
const MODES = process.argv.includes('--nest') ? ['baseline', 'nereid', 'nest'] : ['baseline', 'nereid'];

/** The repository Nereid serves: models/ itself, or a temp copy of simple with session_thread set. */
function repositoryFor(sessionThread) {
  if (!sessionThread) return path.join(root, 'models');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-'));
  fs.cpSync(path.join(root, 'models/simple'), path.join(dir, 'simple'), { recursive: true });
  fs.appendFileSync(
    path.join(dir, 'simple/config.pbtxt'),
    `\nparameters { key: "session_thread" value: { string_value: "${sessionThread}" } }\n`,
  );
  return dir;
}
const REPOSITORY = repositoryFor(SESSION_THREAD);
const WARMUP_MS = 1000;

function clientFor(port) {
  const def = protoLoader.loadSync(['grpc_service.proto'], {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs: [path.join(root, 'proto')],
  });
  const Service = grpc.loadPackageDefinition(def).inference.GRPCInferenceService;
  return new Service(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
}

function simpleRequest() {
  const a = Buffer.alloc(64);
  const b = Buffer.alloc(64);
  for (let i = 0; i < 16; i++) {
    a.writeInt32LE(i, i * 4);
    b.writeInt32LE(1, i * 4);
  }
  const tensor = (name) => ({ name, datatype: 'INT32', shape: [1, 16] });
  return { model_name: 'simple', id: 'bench', inputs: [tensor('INPUT0'), tensor('INPUT1')], raw_input_contents: [a, b] };
}

function infer(client, request) {
  return new Promise((resolve, reject) =>
    client.ModelInfer(request, (err, res) => (err ? reject(err) : resolve(res))),
  );
}

/** `CONCURRENCY` loops, each issuing its next call when the previous answers, until `untilMs`. */
async function drive(client, request, untilMs, latencies) {
  const loop = async () => {
    while (Date.now() < untilMs) {
      const t0 = process.hrtime.bigint();
      const res = await infer(client, request);
      if (latencies) latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      if (res.raw_output_contents.length !== 2) throw new Error('unexpected response');
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, loop));
}

function startChild(mode) {
  return new Promise((resolve, reject) => {
    const child = fork(path.join(__dirname, 'server-child.js'), [mode, REPOSITORY], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.once('message', (m) => resolve({ child, port: m.port }));
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)));
  });
}

function stopChild(child) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
    child.removeAllListeners('exit');
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.send('stop');
  });
}

async function measure(mode) {
  const { child, port } = await startChild(mode);
  const client = clientFor(port);
  const request = simpleRequest();
  try {
    await drive(client, request, Date.now() + WARMUP_MS);
    const latencies = [];
    const t0 = Date.now();
    await drive(client, request, t0 + SECONDS * 1000, latencies);
    return { latencies, seconds: (Date.now() - t0) / 1000 };
  } finally {
    client.close();
    await stopChild(child);
  }
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function summarize(runs) {
  const latencies = runs.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const seconds = runs.reduce((s, r) => s + r.seconds, 0);
  return { rps: latencies.length / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), n: latencies.length };
}

async function main() {
  const runs = Object.fromEntries(MODES.map((m) => [m, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const mode of MODES) {
      const result = await measure(mode);
      runs[mode].push(result);
      const s = summarize([result]);
      console.log(`round ${r + 1} ${mode.padEnd(8)} ${s.rps.toFixed(0)} infer/s  p50 ${s.p50.toFixed(2)} ms  p99 ${s.p99.toFixed(2)} ms`);
    }
  }
  const base = summarize(runs.baseline);
  const ner = summarize(runs.nereid);
  const nest = runs.nest ? summarize(runs.nest) : undefined;
  const thread = SESSION_THREAD ? `, session_thread=${SESSION_THREAD}` : '';
  console.log(`\ngRPC ModelInfer, models/simple${thread}, concurrency ${CONCURRENCY}, ${ROUNDS} x ${SECONDS}s each`);
  console.log('server     infer/s   p50 ms   p99 ms   calls');
  for (const [name, s] of [['baseline', base], ['nereid', ner], ...(nest ? [['nest-grpc', nest]] : [])]) {
    console.log(`${name.padEnd(9)} ${s.rps.toFixed(0).padStart(8)} ${s.p50.toFixed(2).padStart(8)} ${s.p99.toFixed(2).padStart(8)} ${String(s.n).padStart(7)}`);
  }
  const ratio = ner.rps / base.rps;
  console.log(`\nratio nereid/baseline (throughput): ${ratio.toFixed(2)} (target >= 0.80)`);
  if (nest) console.log(`ratio nest-grpc/baseline (throughput): ${(nest.rps / base.rps).toFixed(2)}   nest-grpc/nereid: ${(nest.rps / ner.rps).toFixed(2)}`);
  return ratio;
}

main().then(
  () => {
    if (SESSION_THREAD) fs.rmSync(REPOSITORY, { recursive: true, force: true });
    process.exit(0);
  },
  (err) => {
    console.error(err);
    process.exit(1);
  },
);

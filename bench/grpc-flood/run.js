#!/usr/bin/env node
/**
 * bench/grpc-flood (issue 16): gRPC request messages in the budget of request bytes held at once.
 *
 * The built server (`npm run build` first) serving `simple` and `identity_fp32`, flooded for a phase
 * with large unary ModelInfer requests (64 calls in flight over 16 connections, each an 8 MiB FP32
 * tensor through identity_fp32) while 8 normal gRPC clients call `simple` one request at a time.
 * Run twice in the same run: the baseline with a budget too large to matter
 * (--http-max-inflight-body-bytes=1 TiB: what the server did before gRPC messages were counted),
 * then with the default budget (32 MiB) or --budget-mb. The flood runs in a process of its own; each
 * of its calls goes on being issued again until the phase is over, and the run lasts until the calls
 * in flight then have finished (on this machine minutes for the baseline: HTTP/2 flow control and a
 * busy client pace the 8 MiB messages). The normal clients run and RSS is sampled over all of it.
 * Prints per run the idle and peak RSS of the server, the normal clients' answers and the flood's
 * (OK, RESOURCE_EXHAUSTED, other), and the ratio of the two peaks.
 *
 *   node bench/grpc-flood/run.js [--phase-secs 10] [--budget-mb 32] [--message-mb 8]
 */
'use strict';
const { fork } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const { ROOT, startNereid, fmt } = require('../lib/util');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const UNBOUNDED = 2 ** 40;

const definition = protoLoader.loadSync(['grpc_service.proto'], {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [path.join(ROOT, 'proto')],
});
const { GRPCInferenceService } = grpc.loadPackageDefinition(definition).inference;

/** A client with a connection of its own (grpc-js shares one between clients of the same target otherwise). */
function client(port) {
  return new GRPCInferenceService(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': -1,
    'grpc.max_send_message_length': -1,
    'grpc.use_local_subchannel_pool': 1,
  });
}

function infer(c, request) {
  return new Promise((resolve) => c.ModelInfer(request, (err, res) => resolve({ err, res })));
}

/** RSS of a process in MB (VmRSS), or NaN once it is gone. */
function rssMb(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

function repository() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-grpc-flood-'));
  fs.cpSync(path.join(ROOT, 'models/simple'), path.join(dir, 'simple'), { recursive: true });
  fs.cpSync(path.join(ROOT, 'test/fixtures/onnx/identity_fp32'), path.join(dir, 'identity_fp32'), { recursive: true });
  return dir;
}

const SIMPLE = {
  model_name: 'simple',
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: ['1', '16'] },
    { name: 'INPUT1', datatype: 'INT32', shape: ['1', '16'] },
  ],
  raw_input_contents: [Buffer.from(Int32Array.from({ length: 16 }, (_, i) => i).buffer), Buffer.from(new Int32Array(16).fill(1).buffer)],
};

function floodRequest(messageMb) {
  const count = (messageMb * 1024 * 1024) / 4;
  return {
    model_name: 'identity_fp32',
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: ['1', String(count)] }],
    raw_input_contents: [Buffer.alloc(count * 4, 1)],
  };
}

async function onePhase({ repo, budgetBytes, phaseMs, messageMb, connections, inFlight, log }) {
  const server = await startNereid(repo, [`--http-max-inflight-body-bytes=${budgetBytes}`]);
  const pid = server.child.pid;
  const clients = [];
  try {
    const normal = Array.from({ length: 8 }, () => client(server.grpc));
    clients.push(...normal);
    // Warm-up: both models run, every normal connection opened, then idle.
    const warm = client(server.grpc);
    clients.push(warm);
    for (let i = 0; i < 3; i++) await infer(warm, floodRequest(messageMb));
    for (const c of normal) for (let i = 0; i < 20; i++) await infer(c, SIMPLE);
    await sleep(1000);
    const samples = [];
    for (let i = 0; i < 10; i++) {
      samples.push(rssMb(pid));
      await sleep(100);
    }
    const idle = samples.sort((a, b) => a - b)[5];
    let peak = idle;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid) || 0)), 50);
    const running = { value: true };
    const normalStats = { ok: 0, failures: [], slowestMs: 0 };
    const normalLoops = normal.map(async (c) => {
      while (running.value) {
        const started = Date.now();
        const { err, res } = await infer(c, SIMPLE);
        normalStats.slowestMs = Math.max(normalStats.slowestMs, Date.now() - started);
        if (!err && res.outputs.some((o) => o.name === 'OUTPUT0')) normalStats.ok++;
        else normalStats.failures.push(err ? `${err.code} ${err.details}` : 'no OUTPUT0');
      }
    });
    // The flood runs in a process of its own: its serializing does not slow the normal clients down.
    const flooder = fork(__filename, ['--flood', JSON.stringify({ port: server.grpc, connections, inFlight, messageMb, phaseMs })], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
    const flood = await new Promise((resolve, reject) => {
      flooder.once('message', resolve);
      flooder.once('exit', (code) => reject(new Error(`the flood client exited (${code}) without a result`)));
    });
    running.value = false;
    await Promise.all(normalLoops);
    clearInterval(sampler);
    let after = rssMb(pid);
    const settleStart = Date.now();
    while (after > idle * 1.2 && Date.now() - settleStart < 15000) {
      await sleep(250);
      after = rssMb(pid);
    }
    const result = {
      budgetBytes,
      idleMb: idle,
      peakMb: peak,
      peakRatio: peak / idle,
      afterMb: after,
      normalOk: normalStats.ok,
      normalFailures: normalStats.failures.length,
      failureSamples: normalStats.failures.slice(0, 5),
      slowestNormalMs: normalStats.slowestMs,
      flood,
    };
    const label = budgetBytes >= UNBOUNDED ? 'no budget (1 TiB)' : `budget ${fmt(budgetBytes / 2 ** 20, 0)} MiB`;
    log(
      `${label.padEnd(18)} idle RSS ${fmt(idle, 1)} MB, peak ${fmt(peak, 1)} MB (${fmt(peak / idle, 2)}x idle), after ${fmt(after, 1)} MB; ` +
        `normal ${normalStats.ok} ok, ${normalStats.failures.length} failed (slowest ${normalStats.slowestMs} ms)` +
        `${normalStats.failures.length ? ` [${normalStats.failures.slice(0, 2).join(' | ')}]` : ''}; ` +
        `flood ${flood.ok} ok, ${flood.exhausted} RESOURCE_EXHAUSTED, ${flood.other.length} other${flood.other.length ? ` [${flood.other[0]}]` : ''}`,
    );
    return result;
  } finally {
    for (const c of clients) c.close();
    await server.stop();
  }
}

/** Both runs: the baseline without a budget that matters, then with `budgetMb`. */
async function runGrpcFlood(options = {}) {
  const log = options.log ?? console.log;
  const phaseMs = options.phaseMs ?? 10000;
  const messageMb = options.messageMb ?? 8;
  const budgetBytes = (options.budgetMb ?? 32) * 2 ** 20;
  const repo = repository();
  const common = { repo, phaseMs, messageMb, connections: options.connections ?? 16, inFlight: options.inFlight ?? 4, log };
  log(`gRPC flood: ${common.connections * common.inFlight} unary ModelInfer calls of ${messageMb} MiB in flight, 8 normal clients, ${phaseMs / 1000} s per run`);
  try {
    const baseline = options.skipBaseline ? undefined : await onePhase({ ...common, budgetBytes: UNBOUNDED });
    const bounded = await onePhase({ ...common, budgetBytes });
    if (baseline) log(`peak RSS with the budget / without: ${fmt(bounded.peakMb / baseline.peakMb, 2)}x`);
    return { baseline, bounded };
  } finally {
    fs.rmSync(repo, { recursive: true, force: true });
  }
}

/** The flood (in the child process): `inFlight` calls on each of `connections` connections for `phaseMs`. */
async function flood({ port, connections, inFlight, messageMb, phaseMs }) {
  const counts = { ok: 0, exhausted: 0, other: [] };
  // Serialized once and sent as it is: serializing 8 MiB per call would make the flood client, not
  // the server, the bottleneck.
  const method = GRPCInferenceService.service.ModelInfer;
  const bytes = method.requestSerialize(floodRequest(messageMb));
  const clients = Array.from(
    { length: connections },
    () => new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.max_receive_message_length': -1, 'grpc.max_send_message_length': -1, 'grpc.use_local_subchannel_pool': 1 }),
  );
  const send = (c) => new Promise((resolve) => c.makeUnaryRequest(method.path, (b) => b, (b) => b, bytes, (err) => resolve({ err })));
  const deadline = Date.now() + phaseMs;
  await Promise.all(
    clients.flatMap((c) =>
      Array.from({ length: inFlight }, async () => {
        while (Date.now() < deadline) {
          const { err } = await send(c);
          if (!err) counts.ok++;
          else if (err.code === grpc.status.RESOURCE_EXHAUSTED) counts.exhausted++;
          else counts.other.push(`${err.code} ${err.details}`.slice(0, 160));
        }
      }),
    ),
  );
  for (const c of clients) c.close();
  return counts;
}

module.exports = { runGrpcFlood };

if (require.main === module && process.argv[2] === '--flood') {
  flood(JSON.parse(process.argv[3])).then((counts) => process.send(counts, () => process.exit(0)));
} else if (require.main === module) {
  const argv = process.argv.slice(2);
  const arg = (name) => {
    const i = argv.indexOf(name);
    return i === -1 ? undefined : Number(argv[i + 1]);
  };
  runGrpcFlood({ phaseMs: (arg('--phase-secs') ?? 10) * 1000, budgetMb: arg('--budget-mb'), messageMb: arg('--message-mb') }).then(
    (r) => process.exit(r.bounded.normalFailures === 0 ? 0 : 1),
    (e) => {
      console.error(e);
      process.exit(2);
    },
  );
}

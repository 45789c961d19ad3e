#!/usr/bin/env node
'use strict';
// bench/sequence-batching: the ONNX accumulator (running sum in an implicit state tensor) behind the
// sequence batcher, in one run of one Nereid:
// 1. throughput: 64 concurrent sequences x 100 steps, each sequence closed-loop over HTTP (its next
//    request once the previous one is answered), with the oldest strategy and max_batch_size 8,
//    against the same graph with max_batch_size 0 (one request per execution); rounds alternate.
//    Every answer is checked against the running sum the client computes.
// 2. added latency: one client, one sequence, on the oldest-strategy model, against the same graph
//    served by the default scheduler (no sequence_batching: the client sends START/READY and carries
//    the state itself). p50 of each, and the difference.
// Clients: one raw keep-alive HTTP connection per sequence (raw-client.js), JSON tensors, every
// request encoded before the timed part.
// Usage: node bench/sequence-batching/run.js [rounds=3] [steps=100] [latency requests=2000]
//        (needs `npm run build` first)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ROOT, startNereid, fmt } = require('../lib/util');
const { RawConnection, encodeRequest } = require('./raw-client');
const { accumulatorModel, accumulatorConfig, accumulatorPlainConfig } = require(path.join(ROOT, 'scripts/onnx/sequence-models'));

const ROUNDS = Number(process.argv[2] || 3);
const STEPS = Number(process.argv[3] || 100);
const LATENCY_REQUESTS = Number(process.argv[4] || 2000);
const SEQUENCES = 64;

/** The oldest strategy for 64 candidate sequences, batches formed as soon as the instance is free. */
const oldest = (preferred) =>
  `oldest {\n    max_candidate_sequences: 64\n${preferred ? `    preferred_batch_size: [ ${preferred} ]\n` : ''}    max_queue_delay_microseconds: 0\n  }`;

function writeModel(repo, name, onnx, config) {
  fs.mkdirSync(path.join(repo, name, '1'), { recursive: true });
  fs.writeFileSync(path.join(repo, name, '1', 'model.onnx'), Buffer.from(onnx));
  fs.writeFileSync(path.join(repo, name, 'config.pbtxt'), config);
}

function makeRepo() {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nereid-bench-seq-'));
  writeModel(repo, 'acc_oldest', accumulatorModel(true), accumulatorConfig({ name: 'acc_oldest', strategy: oldest(8) }));
  writeModel(repo, 'acc_nobatch', accumulatorModel(false), accumulatorConfig({ name: 'acc_nobatch', maxBatchSize: 0, strategy: oldest(0) }));
  writeModel(repo, 'acc_plain', accumulatorModel(true), accumulatorPlainConfig('acc_plain'));
  return repo;
}

/** Sends a pre-encoded infer request on a raw keep-alive connection; resolves with the parsed response. */
async function send(conn, model, bytes) {
  const r = await conn.send(bytes);
  if (r.status !== 200) throw new Error(`${model}: ${r.status} ${r.body}`);
  return JSON.parse(r.body);
}

/** The whole HTTP request of one step, encoded before the timed part. */
const encoded = (port, model, body) => encodeRequest(port, `/v2/models/${model}/infer`, body);

async function connections(port, n) {
  const conns = Array.from({ length: n }, () => new RawConnection(port));
  await Promise.all(conns.map((c) => c.ready));
  return conns;
}

function outputOf(res, name = 'OUTPUT') {
  return res.outputs.find((o) => o.name === name).data[0];
}

function seqBody(id, value, start, end, batching) {
  return `{"parameters":{"sequence_id":${id},"sequence_start":${start},"sequence_end":${end}},` +
    `"inputs":[{"name":"INPUT","datatype":"INT32","shape":${batching ? '[1,1]' : '[1]'},"data":[${value}]}]}`;
}

/** The default-scheduler form: the client sends the controls and the state itself. */
function plainBody(value, start, state) {
  const t = (name, d) => `{"name":"${name}","datatype":"INT32","shape":[1,1],"data":[${d}]}`;
  return `{"inputs":[${t('INPUT', value)},${t('START', start ? 1 : 0)},${t('READY', 1)},${t('ACC_IN', state)}]}`;
}

const value = (k, i) => ((k * 31 + i * 7) % 19) - 9;

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function stats(port, model) {
  const r = await fetch(`http://127.0.0.1:${port}/v2/models/${model}/stats`).then((x) => x.json());
  const s = r.model_stats[0];
  return { inferences: Number(s.inference_count), executions: Number(s.execution_count) };
}

/**
 * 64 sequences x STEPS, all at once; returns req/s, latency percentiles (ms) and mean batch size.
 * Every request is encoded before the clock starts (the values, and for `acc_plain` the state the
 * client sends, are known in advance: the state is the running sum so far), so the client's work
 * per request is a write, a read and the check of the answer.
 */
async function throughputRound(port, model, batching, idBase) {
  const conns = await connections(port, SEQUENCES);
  const plain = model === 'acc_plain';
  const plans = conns.map((_, k) => {
    const requests = [];
    const sums = [];
    let sum = 0;
    for (let i = 0; i < STEPS; i++) {
      const v = value(k, i);
      const body = plain ? plainBody(v, i === 0, sum) : seqBody(idBase + k, v, i === 0, i === STEPS - 1, batching);
      sum += v;
      requests.push(encoded(port, model, body));
      sums.push(sum);
    }
    return { requests, sums };
  });
  const before = await stats(port, model);
  const latencies = new Float64Array(SEQUENCES * STEPS);
  let timed = 0;
  let wrong = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(conns.map(async (conn, k) => {
    const { requests, sums } = plans[k];
    for (let i = 0; i < STEPS; i++) {
      const t0 = performance.now();
      const res = await send(conn, model, requests[i]);
      latencies[timed++] = performance.now() - t0;
      if (outputOf(res) !== sums[i] || (plain && outputOf(res, 'ACC_OUT') !== sums[i])) wrong++;
    }
  }));
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  conns.forEach((c) => c.close());
  const after = await stats(port, model);
  latencies.sort();
  const executions = after.executions - before.executions;
  return {
    rps: (SEQUENCES * STEPS) / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), wrong,
    clientCpu: (used.user + used.system) / 1e6 / seconds,
    batch: executions > 0 ? (after.inferences - before.inferences) / executions : 0,
  };
}

/**
 * One client, one sequence on the sequence batcher and the same work on the default scheduler (the
 * client sending START/READY and carrying the state), request by request in turn, so that the
 * machine's background load falls on both alike. Returns each side's p50/p99 in µs.
 */
async function latencyRound(port, idBase) {
  const [seqConn, plainConn] = await connections(port, 2);
  const samples = { seq: [], plain: [] };
  const plainRequests = [];
  const seqRequests = [];
  const sums = [];
  let sum = 0;
  for (let i = 0; i < LATENCY_REQUESTS; i++) {
    const v = value(1, i);
    const start = i === 0;
    // The default-scheduler side sends the state itself: the running sum before this step.
    plainRequests.push(encoded(port, 'acc_plain', plainBody(v, start, sum)));
    seqRequests.push(encoded(port, 'acc_oldest', seqBody(idBase, v, start, i === LATENCY_REQUESTS - 1, true)));
    sum += v;
    sums.push(sum);
  }
  let wrong = 0;
  const timed = async (side, conn, model, bytes) => {
    const t0 = performance.now();
    const res = await send(conn, model, bytes);
    samples[side].push((performance.now() - t0) * 1000);
    return res;
  };
  for (let i = 0; i < LATENCY_REQUESTS; i++) {
    const plain = await timed('plain', plainConn, 'acc_plain', plainRequests[i]);
    const seq = await timed('seq', seqConn, 'acc_oldest', seqRequests[i]);
    if (outputOf(plain) !== sums[i] || outputOf(plain, 'ACC_OUT') !== sums[i]) wrong++;
    if (outputOf(seq) !== sums[i]) wrong++;
  }
  seqConn.close();
  plainConn.close();
  const summary = (a) => {
    a.sort((x, y) => x - y);
    return { p50: percentile(a, 50), p99: percentile(a, 99) };
  };
  return { seq: summary(samples.seq), plain: summary(samples.plain), wrong };
}

function line(name, r) {
  return `${name.padEnd(26)} ${fmt(r.rps).padStart(6)} req/s   p50 ${fmt(r.p50, 2)} ms   p99 ${fmt(r.p99, 2)} ms   ` +
    `mean batch ${fmt(r.batch, 2)}   client cpu ${fmt(100 * r.clientCpu)}%   wrong sums ${r.wrong}`;
}

async function main() {
  console.log(`bench/sequence-batching: ${SEQUENCES} sequences x ${STEPS} steps, ${ROUNDS} alternating rounds, ` +
    `${os.cpus().length} cpus, node ${process.version}`);
  const repo = makeRepo();
  const nereid = await startNereid(repo).catch((e) => {
    fs.rmSync(repo, { recursive: true, force: true });
    throw e;
  });
  let idBase = 1000;
  const nextIds = () => (idBase += 1000);
  try {
    // Warm-up: each model once (sessions, JIT, sockets).
    await throughputRound(nereid.http, 'acc_nobatch', false, nextIds());
    await throughputRound(nereid.http, 'acc_oldest', true, nextIds());
    console.log(`\nthroughput: accumulator, oldest strategy, max_batch_size 8 vs max_batch_size 0`);
    const totals = { nobatch: 0, oldest: 0, wrong: 0 };
    for (let round = 1; round <= ROUNDS; round++) {
      const n = await throughputRound(nereid.http, 'acc_nobatch', false, nextIds());
      console.log(line(`max_batch_size 0, round ${round}`, n));
      const o = await throughputRound(nereid.http, 'acc_oldest', true, nextIds());
      console.log(line(`max_batch_size 8, round ${round}`, o));
      totals.nobatch += n.rps;
      totals.oldest += o.rps;
      totals.wrong += n.wrong + o.wrong;
    }
    console.log(`mean       max_batch_size 0 ${fmt(totals.nobatch / ROUNDS)} req/s   max_batch_size 8 ${fmt(totals.oldest / ROUNDS)} req/s`);
    console.log(`ratio batched/unbatched throughput: ${fmt(totals.oldest / totals.nobatch, 2)}x (target >= 3x)`);
    // For reference: the same 64 clients on the default scheduler, each carrying its own state
    // (no sequence batcher, no batching): what one request per execution costs without it.
    console.log(line('default scheduler, batch 1', await throughputRound(nereid.http, 'acc_plain', true, nextIds())));

    console.log(`\nadded latency: one client, one sequence of ${LATENCY_REQUESTS} requests, requests to the two models in turn, ${ROUNDS} rounds`);
    await latencyRound(nereid.http, nextIds());
    const added = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const r = await latencyRound(nereid.http, nextIds());
      console.log(`round ${round}: default scheduler p50 ${fmt(r.plain.p50)} µs (p99 ${fmt(r.plain.p99)})   sequence batcher p50 ` +
        `${fmt(r.seq.p50)} µs (p99 ${fmt(r.seq.p99)})   wrong sums ${r.wrong}`);
      added.push(r.seq.p50 - r.plain.p50);
      totals.wrong += r.wrong;
    }
    const median = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];
    console.log(`sequence batcher's added latency, median over the rounds of the p50 difference: ${fmt(median(added))} µs (target <= 50 µs)`);
    if (totals.wrong > 0) {
      console.error(`${totals.wrong} answers were not the running sum`);
      process.exitCode = 1;
    }
  } finally {
    await nereid.stop();
    fs.rmSync(repo, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

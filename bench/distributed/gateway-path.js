#!/usr/bin/env node
'use strict';
// bench/distributed, the gateway's own transport work per request, in one process and without I/O:
// a `simple` request (two INT32 [1,16] inputs) as the HTTP front door hands it over (a fresh request
// with a lazy abort source) goes through ClusterSchedulerChannel.enqueue (request id, waiter, cancel
// hook, execute-batch message, codec encode as the Redis port does it), then the worker's response
// (encoded once beforehand, handed over as ioredis hands a field: a slice at an odd offset of a
// larger buffer) is decoded and routed to the request's sink. Prints the CPU µs per request
// (process.cpuUsage) of two builds, interleaved, and the ratio B / A. Syscalls and ioredis are not in
// it: bench/distributed/gateway-ab.js measures the whole gateway process.
// Usage: node bench/distributed/gateway-path.js <dist of build A> [dist of build B=./dist] [rounds=5] [requests per round=100000]
const path = require('node:path');
const os = require('node:os');
const { ROOT } = require('../lib/util');

const [distA, distB = path.join(ROOT, 'dist'), roundsArg, nArg] = process.argv.slice(2);
if (!distA) {
  console.error('usage: node bench/distributed/gateway-path.js <dist of build A> [dist of build B] [rounds] [requests]');
  process.exit(2);
}
const ROUNDS = Number(roundsArg || 5);
const N = Number(nArg || 100_000);
/** Requests per measured stretch (their answers are made before it). */
const CHUNK = 1000;

/** The per-request path of one build, ready to run `n` times; returns CPU µs per request. */
function pathOf(dist) {
  const d = path.resolve(dist);
  const transport = require(`${d}/libs/transport/src`);
  const protocol = require(`${d}/libs/protocol/src`);
  const { ClusterSchedulerChannel } = require(`${d}/apps/gateway/src/distributed/remote-channels`);
  const { LazyAbort } = require(`${d}/apps/gateway/src/grpc/lazy-abort`);
  let pendingReply;
  const port = {
    // What RedisPort.enqueue does before its outbox: encode the message.
    enqueue: async (_queue, message) => {
      pendingReply = message.requests[0].requestId;
      transport.encodeMessage(message);
    },
    publish: async () => undefined,
  };
  const router = new transport.ResponseRouter(port, 'gateway-vm-12345-0a1b2c');
  const channel = new ClusterSchedulerChannel(port, router, { open() {}, enqueue() {}, close: async () => undefined, pendingCount: () => 0 });
  const config = { name: 'simple', platform: 'onnxruntime_onnx' };
  channel.open('simple/1/1', config, { instances: 1, depth: 1 });
  const out = (name) => ({ name, datatype: 'INT32', shape: [1, 16], data: new Int32Array(16).fill(3) });
  /** The worker's answer, with the request id patched in per request. */
  const answer = (requestId) => {
    const buf = transport.encodeMessage({
      kind: 'response', requestId, final: true,
      response: { id: '', modelName: 'simple', modelVersion: '1', outputs: [out('OUTPUT0'), out('OUTPUT1')] },
      stats: { queueNs: 1000, computeInputNs: 100, computeInferNs: 1000, computeOutputNs: 100, execStart: Date.now() + 0.5, batchSize: 1 },
    });
    const big = Buffer.alloc(buf.length + 64);
    buf.copy(big, 13);
    return big.subarray(13, 13 + buf.length);
  };
  let answered = 0;
  const sink = { send: () => answered++, fail: (e) => { throw e; }, executed: () => undefined };
  const input = (name) => ({ name, datatype: 'INT32', shape: [1, 16], data: new Int32Array(16).fill(1) });
  return (n) => {
    // The answers are made beforehand, a chunk at a time and outside the measured time (the
    // worker's work), with the ids the router hands out next.
    let used = 0;
    for (let done = 0; done < n; done += CHUNK) {
      const first = Number(router.nextRequestId().split(':').pop());
      const answers = Array.from({ length: CHUNK }, (_, i) => answer(`gateway-vm-12345-0a1b2c:${first + 1 + i}`));
      const before = process.cpuUsage();
      for (let i = 0; i < CHUNK; i++) {
        const request = protocol.newInferenceRequest('simple', -1);
        request.inputs = [input('INPUT0'), input('INPUT1')];
        new LazyAbort().attach(request);
        channel.enqueue('simple/1/1', { request, sink });
        router.route(transport.decodeMessage(answers[i]));
      }
      const d = process.cpuUsage(before);
      used += d.user + d.system;
    }
    if (answered < n || pendingReply === undefined) throw new Error(`only ${answered} of ${n} answered`);
    answered = 0;
    return used / n;
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const runs = { A: pathOf(distA), B: pathOf(distB) };
const us = { A: [], B: [] };
console.log(`bench/distributed gateway path: ${N} requests per round, ${ROUNDS} rounds, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log(`A = ${distA}\nB = ${distB}`);
for (const k of ['A', 'B']) runs[k](Math.min(N, 20_000)); // warm-up
for (let r = 0; r < ROUNDS; r++) {
  for (const k of ['A', 'B']) {
    us[k].push(runs[k](N));
    console.log(`${k} round ${r + 1}: ${us[k].at(-1).toFixed(2)} us CPU per request`);
  }
}
console.log(`median A ${median(us.A).toFixed(2)} us, B ${median(us.B).toFixed(2)} us per request: B / A ${(median(us.B) / median(us.A)).toFixed(2)}x (load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')})`);

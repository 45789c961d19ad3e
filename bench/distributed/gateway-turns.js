#!/usr/bin/env node
'use strict';
// bench/distributed, the gateway's transport over a real Redis, by turns: `simple` requests as the
// HTTP front door hands them over go through ClusterSchedulerChannel, the ResponseRouter and the
// RedisPort of a build to a private redis-server, where an echo process (plain ioredis + the
// build's codec, standing in for scheduler and worker) answers each with a `simple` response in
// the gateway's mailbox, one entry per echo turn. Each round hands over `per-turn` requests in one
// event-loop turn and waits until all are answered, `turns` times: the CPU this process spends per
// request (process.cpuUsage) is the gateway's transport work, per request and per turn (encode,
// Redis commands and writes, the mailbox read, decode, routing), without HTTP and without the other
// roles. The turn's size is fixed, not whatever the load makes it, so two builds compare at the
// same batching on a busy machine. Builds A and B run alternately in one process, each with its own
// key prefix on the one redis-server.
// Usage: node bench/distributed/gateway-turns.js <dist of build A> [dist of build B=./dist] [per-turn=16] [turns=2000] [rounds=5]
const path = require('node:path');
const os = require('node:os');
const { spawn } = require('node:child_process');
const { ROOT } = require('../lib/util');
const { startRedis } = require('./procs');

if (process.argv[2] === '--echo') echo(process.argv[3], process.argv[4], process.argv.slice(5));
else {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}

/** The stand-in for scheduler and worker: answers every request on the queues of `prefixes`. */
async function echo(dist, url, prefixes) {
  const Redis = require(path.join(ROOT, 'node_modules/ioredis'));
  const { decodeMessage, encodeMessage } = require(`${path.resolve(dist)}/libs/transport/src`);
  const reader = new Redis(url);
  const writer = new Redis(url);
  const queues = prefixes.map((p) => `${p}q:requests:simple/1`);
  for (const q of queues) await reader.xgroup('CREATE', q, 'nereid', '$', 'MKSTREAM').catch(() => undefined);
  const out = (name) => ({ name, datatype: 'INT32', shape: [1, 16], data: new Int32Array(16).fill(3) });
  const ids = queues.map(() => '>');
  for (;;) {
    const got = await reader.xreadgroupBuffer('GROUP', 'nereid', 'echo', 'COUNT', 1000, 'BLOCK', 0, 'STREAMS', ...queues, ...ids);
    const p = writer.pipeline();
    for (const [rawQueue, entries] of got) {
      const queue = rawQueue.toString();
      const byMailbox = new Map();
      for (const [id, fields] of entries) {
        for (const r of decodeMessage(fields[1]).requests) {
          const mailbox = `${queue.slice(0, queue.indexOf('q:'))}m:gateway:${r.replyTo}`;
          if (!byMailbox.has(mailbox)) byMailbox.set(mailbox, []);
          byMailbox.get(mailbox).push('m', encodeMessage({
            kind: 'response', requestId: r.requestId, final: true,
            response: { id: r.clientId, modelName: 'simple', modelVersion: '1', outputs: [out('OUTPUT0'), out('OUTPUT1')] },
            stats: { queueNs: 1000, computeInputNs: 100, computeInferNs: 1000, computeOutputNs: 100, execStart: Date.now() + 0.5, batchSize: 1 },
          }));
        }
        p.xack(queue, 'nereid', id).xdel(queue, id);
      }
      for (const [mailbox, fields] of byMailbox) p.xadd(mailbox, '*', ...fields);
    }
    await p.exec();
  }
}

/** The gateway's side of one build: hands over `perTurn` requests in one turn, `turns` times; CPU µs per request. */
async function gatewayOf(dist, url, prefix) {
  const d = path.resolve(dist);
  const transport = require(`${d}/libs/transport/src`);
  const protocol = require(`${d}/libs/protocol/src`);
  const { ClusterSchedulerChannel } = require(`${d}/apps/gateway/src/distributed/remote-channels`);
  const { LazyAbort } = require(`${d}/apps/gateway/src/grpc/lazy-abort`);
  const port = await transport.connectRedisPort({ url, prefix });
  const router = new transport.ResponseRouter(port, `gw-${prefix.slice(0, -1)}`);
  await router.start();
  const local = { open() {}, enqueue() {}, close: async () => undefined, pendingCount: () => 0 };
  const channel = new ClusterSchedulerChannel(port, router, local);
  channel.open('simple/1/1', { name: 'simple', platform: 'onnxruntime_onnx' }, { instances: 1, depth: 1 });
  const input = (name) => ({ name, datatype: 'INT32', shape: [1, 16], data: new Int32Array(16).fill(1) });
  let answered = 0;
  let wake;
  const sink = {
    send: () => {
      if (++answered === wanted) wake();
    },
    fail: (e) => {
      throw e;
    },
    executed: () => undefined,
  };
  let wanted = 0;
  const run = async (perTurn, turns) => {
    const before = process.cpuUsage();
    for (let t = 0; t < turns; t++) {
      answered = 0;
      wanted = perTurn;
      const done = new Promise((r) => (wake = r));
      for (let i = 0; i < perTurn; i++) {
        const request = protocol.newInferenceRequest('simple', -1);
        request.inputs = [input('INPUT0'), input('INPUT1')];
        new LazyAbort().attach(request);
        channel.enqueue('simple/1/1', { request, sink });
      }
      await done;
    }
    const used = process.cpuUsage(before);
    return (used.user + used.system) / (perTurn * turns);
  };
  return { run, close: () => port.close() };
}

async function main() {
  const [distA, distB = path.join(ROOT, 'dist'), perTurnArg, turnsArg, roundsArg] = process.argv.slice(2);
  if (!distA) {
    console.error('usage: node bench/distributed/gateway-turns.js <dist of build A> [dist of build B] [per-turn] [turns] [rounds]');
    process.exit(2);
  }
  const perTurn = Number(perTurnArg || 16);
  const turns = Number(turnsArg || 2000);
  const rounds = Number(roundsArg || 5);
  const loadavg = () => os.loadavg().map((l) => l.toFixed(1)).join(' ');
  const redis = await startRedis();
  const echoer = spawn(process.execPath, [__filename, '--echo', distB, redis.url, 'a:', 'b:'], { stdio: 'inherit' });
  try {
    await new Promise((r) => setTimeout(r, 500));
    const builds = { A: await gatewayOf(distA, redis.url, 'a:'), B: await gatewayOf(distB, redis.url, 'b:') };
    console.log(`bench/distributed gateway turns: ${perTurn} requests per turn, ${turns} turns per round, ${rounds} rounds, load average ${loadavg()}`);
    console.log(`A = ${distA}\nB = ${distB}`);
    const us = { A: [], B: [] };
    for (const k of ['A', 'B']) await builds[k].run(perTurn, Math.min(turns, 300)); // warm-up
    for (let r = 0; r < rounds; r++) {
      for (const k of ['A', 'B']) {
        us[k].push(await builds[k].run(perTurn, turns));
        console.log(`${k} round ${r + 1}: ${us[k].at(-1).toFixed(2)} us CPU per request`);
      }
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
    console.log(`median A ${median(us.A).toFixed(2)} us, B ${median(us.B).toFixed(2)} us per request: B / A ${(median(us.B) / median(us.A)).toFixed(2)}x (load average ${loadavg()})`);
    for (const b of Object.values(builds)) await b.close();
  } finally {
    echoer.kill();
    await redis.stop();
  }
}

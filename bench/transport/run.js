#!/usr/bin/env node
'use strict';
// The message port's cost: a request round trip gateway → work queue → worker → mailbox → gateway
// (execute-batch with the `simple` model's two INT32 [1,16] inputs, a response with two outputs),
// with C requests outstanding, through the in-memory port (the embedded baseline) and through the
// Redis-streams port on a private redis-server on loopback, in one run; prints both and the ratio.
// Both ports run in this one process (two Redis ports: the gateway's and the worker's connections).
// Usage (after `npm run build`): node bench/transport/run.js [seconds=5] [concurrency=64]
const { spawn } = require('node:child_process');
const path = require('node:path');
const { freePort } = require('../lib/util');

const T = require(path.resolve(__dirname, '../../dist/libs/transport/src'));
const seconds = Number(process.argv[2] ?? 5);
const concurrency = Number(process.argv[3] ?? 64);

async function startRedis() {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  child.on('error', (e) => {
    console.error(`bench/transport: cannot start redis-server (${e.message}); apt-get install redis-server`);
    process.exit(1);
  });
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    try {
      const p = await T.connectRedisPort({ url });
      await p.close();
      return { url, child };
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error('redis-server did not start');
}

const tensor = (name) => ({ name, datatype: 'INT32', shape: [1, 16], data: Int32Array.from({ length: 16 }, (_, i) => i) });

async function measure(label, gatewayPort, workerPort) {
  const router = new T.ResponseRouter(gatewayPort, `gw-${label}`);
  await router.start();
  const queue = T.Names.workQueue(`simple/1/0-${label}`);
  const worker = await workerPort.consume(queue, (d) => {
    const req = d.message.requests[0];
    const [a, b] = req.inputs;
    const sum = new Int32Array(16);
    const diff = new Int32Array(16);
    for (let i = 0; i < 16; i++) {
      sum[i] = a.data[i] + b.data[i];
      diff[i] = a.data[i] - b.data[i];
    }
    void workerPort.send(req.replyTo, {
      kind: 'response', requestId: req.requestId, final: true,
      response: { id: req.clientId, modelName: 'simple', modelVersion: '1', outputs: [
        { name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16], data: sum },
        { name: 'OUTPUT1', datatype: 'INT32', shape: [1, 16], data: diff },
      ] },
    }).then(() => d.ack());
  }, { prefetch: concurrency });

  const latencies = [];
  let done = 0;
  const one = () => new Promise((resolve, reject) => {
    const requestId = router.nextRequestId();
    const started = performance.now();
    router.register(requestId, { onResponse: (m) => {
      if (m.error) reject(new Error(m.error.message));
      latencies.push(performance.now() - started);
      resolve();
    } });
    const request = {
      requestId, replyTo: router.mailbox, clientId: '', modelName: 'simple', modelVersion: -1,
      inputs: [tensor('INPUT0'), tensor('INPUT1')], parameters: {}, correlationId: 0n,
      flags: { sequenceStart: false, sequenceEnd: false }, priority: 0, timeoutUs: 0,
    };
    gatewayPort.enqueue(queue, { kind: 'execute-batch', batchId: requestId, key: 'simple/1/0', instance: 0, slot: 0, requests: [request] })
      .catch(reject);
  });
  // The clock, not a timer: the in-memory port runs entirely on microtasks, so a timer would
  // never fire while the clients keep it busy.
  const client = async () => {
    while (performance.now() < deadline) {
      await one();
      done++;
    }
  };
  // warm-up
  for (let i = 0; i < 200; i++) await one();
  latencies.length = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(Array.from({ length: concurrency }, client));
  const elapsed = (performance.now() - started) / 1000;
  await worker.close();
  await router.stop();
  latencies.sort((x, y) => x - y);
  const p = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return { label, rps: done / elapsed, p50: p(0.5), p99: p(0.99) };
}

(async () => {
  const broker = new T.InMemoryBroker();
  const mem = await measure('in-memory', new T.InMemoryPort(broker), new T.InMemoryPort(broker));
  const redis = await startRedis();
  const gw = await T.connectRedisPort({ url: redis.url });
  const wk = await T.connectRedisPort({ url: redis.url });
  const red = await measure('redis-streams', gw, wk);
  await gw.close();
  await wk.close();
  const Redis = require('ioredis');
  const bare = new Redis(redis.url);
  const payload = Buffer.alloc(300, 7);
  let xadds = 0;
  const xaddEnd = performance.now() + 2000;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < xaddEnd) {
      await bare.xadd('bare', '*', 'm', payload);
      xadds++;
    }
  }));
  bare.disconnect();
  redis.child.kill();
  for (const r of [mem, red]) {
    console.log(`${r.label.padEnd(14)} ${r.rps.toFixed(0).padStart(8)} round trips/s  p50 ${r.p50.toFixed(3)} ms  p99 ${r.p99.toFixed(3)} ms`);
  }
  console.log(`bare ioredis XADD (300 B, ${concurrency} in flight, 2 s): ${(xadds / 2).toFixed(0)}/s; a round trip above is 5-6 Redis commands`);
  console.log(`ratio redis/in-memory: throughput ${(red.rps / mem.rps).toFixed(3)}x, p50 +${(red.p50 - mem.p50).toFixed(3)} ms (concurrency ${concurrency}, ${seconds} s each)`);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});

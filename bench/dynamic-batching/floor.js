#!/usr/bin/env node
'use strict';
// The ceiling node:http and this machine put on bench/dynamic-batching: a bare node:http server
// that reads the same request and answers with the bytes of an mlp answer (JSON header + 2048
// binary bytes, the same response headers), no decoding, no model, driven by the same client
// (closed-loop.js, 32 connections) in the same process. Prints req/s and the CPU per request of
// server and client together.
// Usage: node bench/dynamic-batching/floor.js [seconds=5] [rounds=3]
const { closedLoop } = require('./closed-loop');
const { bareServer } = require('./mlp-wire');

const SECONDS = Number(process.argv[2] || 5);
const ROUNDS = Number(process.argv[3] || 3);
const requestHeader = Buffer.from(JSON.stringify({
  inputs: [{ name: 'INPUT', shape: [1, 512], datatype: 'FP32', parameters: { binary_data_size: 2048 } }],
  outputs: [{ name: 'OUTPUT', parameters: { binary_data: true } }],
}));

const server = bareServer();

server.listen(0, '127.0.0.1', async () => {
  const { port } = server.address();
  const options = {
    port, path: '/v2/models/mlp/infer', connections: 32,
    body: Buffer.concat([requestHeader, Buffer.alloc(2048)]),
    headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(requestHeader.length) },
  };
  await closedLoop({ ...options, seconds: 1 });
  for (let round = 1; round <= ROUNDS; round++) {
    const before = process.cpuUsage();
    const r = await closedLoop({ ...options, seconds: SECONDS });
    const cpu = process.cpuUsage(before);
    console.log(`floor ${round}   ${r.rps.toFixed(0)} req/s   p50 ${r.p50.toFixed(2)} ms   p99 ${r.p99.toFixed(2)} ms   ` +
      `${((cpu.user + cpu.system) / r.requests).toFixed(1)} us CPU/request (server + client)   errors ${r.errors}`);
  }
  server.close();
});

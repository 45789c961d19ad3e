#!/usr/bin/env node
'use strict';
// The server side of front-door.js: one HTTP server answering bench/dynamic-batching's mlp request
// (binary FP32 [1,512] in, binary OUTPUT [1,512] out) with no model behind it, so that what its
// process spends per request is the front door's own work. Prints its port on the first line.
// Usage: node front-door-server.js bare|<root holding dist/>
//   bare:   a bare node:http server answering with canned answer bytes (mlp-wire.js's bareServer, as floor.js's);
//   <root>: the built startHttpServer (Nest + the infer fast path, as `nereid serve` starts it)
//           of <root>/dist over a stand-in core that answers every request at once with a
//           [1,512] FP32 output (a fresh tensor per request, as a backend's would be).
const path = require('node:path');
const { WIDTH, bareServer } = require('./mlp-wire');

const kind = process.argv[2];
if (!kind) throw new Error('usage: front-door-server.js bare|<root holding dist/>');

function bare() {
  const server = bareServer();
  server.listen(0, '127.0.0.1', () => console.log(server.address().port));
}

/** The InferenceCore calls the HTTP front door makes for an infer request, answered at once. */
function instantCore() {
  const metadata = {
    name: 'mlp', versions: ['1'], platform: 'onnxruntime_onnx',
    inputs: [{ name: 'INPUT', datatype: 'FP32', shape: [-1, WIDTH] }],
    outputs: [{ name: 'OUTPUT', datatype: 'FP32', shape: [-1, WIDTH] }],
  };
  return {
    tracing: false,
    isLive: () => true,
    isReady: () => true,
    isModelReady: () => true,
    isDecoupled: () => false,
    modelMetadata: () => metadata,
    infer(request, observer) {
      const input = request.inputs[0];
      observer.onResponse({
        id: request.id, modelName: request.modelName, modelVersion: '1',
        outputs: [{ name: 'OUTPUT', datatype: 'FP32', shape: [input.shape[0], WIDTH], data: new Float32Array(input.shape[0] * WIDTH) }],
      }, true);
    },
  };
}

async function frontDoor(root) {
  const { startHttpServer } = require(path.resolve(root, 'dist/apps/gateway/src'));
  // The request log `nereid serve` passes, with access and verbose lines off (its defaults).
  const requestLog = { access: false, verbose: false, request() {}, assignId: () => '', accessLine() {} };
  const server = await startHttpServer(instantCore(), {
    host: '127.0.0.1', port: 0, maxInputSize: 64 * 1024 * 1024, allowClientShm: false, requestLog,
  });
  console.log(server.port);
}

// An orderly exit on SIGINT, so that `node --cpu-prof` writes its profile.
process.on('SIGINT', () => process.exit(0));

if (kind === 'bare') bare();
else frontDoor(kind).catch((e) => {
  console.error(e);
  process.exit(1);
});

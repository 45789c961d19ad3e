'use strict';
// bench/dynamic-batching's mlp request and answer on the wire (the KServe binary extension, one
// FP32 [1,512] row in, a binary [1,512] OUTPUT out), shared by its scripts.
const http = require('node:http');

const WIDTH = 512;

/** A KServe binary-extension request: JSON header, then the row's 2048 bytes. */
function binaryRequest() {
  const row = new Float32Array(WIDTH);
  for (let i = 0; i < WIDTH; i++) row[i] = Math.sin(i) * 0.5;
  const header = Buffer.from(JSON.stringify({
    inputs: [{ name: 'INPUT', shape: [1, WIDTH], datatype: 'FP32', parameters: { binary_data_size: row.byteLength } }],
    outputs: [{ name: 'OUTPUT', parameters: { binary_data: true } }],
  }));
  return { body: Buffer.concat([header, Buffer.from(row.buffer)]), headerLength: header.length };
}

/**
 * A bare node:http server (not yet listening) that reads each request and answers with the bytes of
 * an mlp answer (JSON header + 2048 binary bytes, the server's response headers): no decoding, no model.
 */
function bareServer() {
  const header = Buffer.from(JSON.stringify({
    model_name: 'mlp', model_version: '1',
    outputs: [{ name: 'OUTPUT', datatype: 'FP32', shape: [1, WIDTH], parameters: { binary_data_size: WIDTH * 4 } }],
  }));
  const binary = Buffer.alloc(WIDTH * 4);
  return http.createServer((req, res) => {
    req.on('data', () => {});
    req.on('end', () => {
      res.writeHead(200, ['content-type', 'application/octet-stream', 'inference-header-content-length', String(header.length),
        'content-length', String(header.length + binary.length), 'x-content-type-options', 'nosniff']);
      res.write(header);
      res.end(binary);
    });
  });
}

module.exports = { WIDTH, binaryRequest, bareServer };

'use strict';
// The baseline: a minimal node:http server doing the same work as Nereid for the `simple` model
// (parse JSON or binary tensors, one onnxruntime-node session, encode the response). No validation,
// no scheduling, no framework. Prints its port on stdout.
const http = require('node:http');
const path = require('node:path');
const ort = require('onnxruntime-node');

const modelPath = process.argv[2];
// `--nereid-session-options`: the session options Nereid gives a small model on its event loop
// (one intra-op thread, no spinning) instead of onnxruntime's defaults (a spinning pool).
const nereidOptions = process.argv.includes('--nereid-session-options');
const SESSION_OPTIONS = nereidOptions
  ? { intraOpNumThreads: 1, interOpNumThreads: 1, extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } } }
  : {};

async function main() {
  const session = await ort.InferenceSession.create(modelPath, SESSION_OPTIONS);
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      try {
        const body = Buffer.concat(chunks);
        const hl = req.headers['inference-header-content-length'];
        const json = JSON.parse((hl ? body.subarray(0, Number(hl)) : body).toString());
        const feeds = {};
        let off = hl ? Number(hl) : 0;
        for (const i of json.inputs) {
          let data;
          const size = i.parameters && i.parameters.binary_data_size;
          if (size !== undefined) {
            const copy = new Uint8Array(size);
            copy.set(body.subarray(off, off + size));
            off += size;
            data = i.datatype === 'INT32' ? new Int32Array(copy.buffer) : new Float32Array(copy.buffer);
          } else {
            data = i.datatype === 'INT32' ? Int32Array.from(i.data) : Float32Array.from(i.data);
          }
          feeds[i.name] = new ort.Tensor(i.datatype === 'INT32' ? 'int32' : 'float32', data, i.shape);
        }
        const out = await session.run(feeds);
        const binary = json.parameters && json.parameters.binary_data_output;
        const outputs = [];
        const bins = [];
        for (const [name, t] of Object.entries(out)) {
          const o = { name, datatype: t.type === 'int32' ? 'INT32' : 'FP32', shape: t.dims };
          if (binary) {
            const b = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
            o.parameters = { binary_data_size: b.length };
            bins.push(b);
          } else {
            o.data = Array.from(t.data);
          }
          outputs.push(o);
        }
        const header = Buffer.from(JSON.stringify({ model_name: 'simple', model_version: '1', outputs }));
        if (bins.length) {
          res.writeHead(200, { 'content-type': 'application/octet-stream', 'inference-header-content-length': header.length });
          res.end(Buffer.concat([header, ...bins]));
        } else {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(header);
        }
      } catch (e) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: e.message }));
      }
    });
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
  void path;
}

main();

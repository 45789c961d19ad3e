'use strict';
// The baseline: the least a Node server can do to answer ModelInfer for models/simple — grpc-js,
// the same .proto and loader options, one onnxruntime-node session, no validation or scheduling.
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const ort = require('onnxruntime-node');

const root = path.resolve(__dirname, '../..');

function loadService() {
  const def = protoLoader.loadSync(['grpc_service.proto'], {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs: [path.join(root, 'proto')],
  });
  return grpc.loadPackageDefinition(def).inference.GRPCInferenceService.service;
}

/** Copies into a fresh (aligned) Int32Array: protobuf views may start at any byte offset. */
function int32Of(buf) {
  const out = new Int32Array(buf.length / 4);
  new Uint8Array(out.buffer).set(buf);
  return out;
}

async function startBaseline(host, port) {
  const session = await ort.InferenceSession.create(path.join(root, 'models/simple/1/model.onnx'));
  const server = new grpc.Server({ 'grpc.max_receive_message_length': -1, 'grpc.max_send_message_length': -1 });
  server.addService(loadService(), {
    ModelInfer(call, callback) {
      const req = call.request;
      const feeds = {};
      req.inputs.forEach((input, i) => {
        feeds[input.name] = new ort.Tensor('int32', int32Of(req.raw_input_contents[i]), input.shape.map(Number));
      });
      session.run(feeds).then(
        (results) => {
          const outputs = [];
          const raw = [];
          for (const name of session.outputNames) {
            const t = results[name];
            outputs.push({ name, datatype: 'INT32', shape: t.dims });
            raw.push(Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
          }
          callback(null, { model_name: req.model_name, model_version: '1', id: req.id, outputs, raw_output_contents: raw });
        },
        (err) => callback({ code: grpc.status.INTERNAL, details: String(err) }),
      );
    },
  });
  const bound = await new Promise((resolve, reject) =>
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  return { port: bound, close: () => new Promise((resolve) => server.tryShutdown(() => resolve())) };
}

module.exports = { startBaseline };

'use strict';
// The thread that owns one ONNX Runtime session of one model instance. onnxruntime-node's
// `session.run()` blocks the thread it runs on, so every instance runs here, off the event loop.
// Plain JavaScript on purpose: worker_threads loads it with Node alone (no TypeScript loader), both
// from the sources under jest and from dist/. Message shapes: messages.ts (ToWorker / FromWorker).
const { parentPort, workerData } = require('node:worker_threads');
const ort = require('onnxruntime-node');

/** Run options of a quiet run (session-runner.ts QUIET_RUN): only fatal messages from onnxruntime. */
const QUIET_RUN = { logSeverityLevel: 4 };

/** @type {import('onnxruntime-node').InferenceSession | undefined} */
let session;

async function load() {
  try {
    session = await ort.InferenceSession.create(workerData.model, workerData.options);
    parentPort.postMessage({ kind: 'ready', inputNames: session.inputNames, outputNames: session.outputNames });
  } catch (e) {
    parentPort.postMessage({ kind: 'load-error', message: e instanceof Error ? e.message : String(e) });
  }
}

async function run(msg) {
  try {
    const feeds = {};
    for (const t of msg.feeds) feeds[t.name] = new ort.Tensor(t.type, t.data, t.dims);
    // Always fetch every output: onnxruntime-node 1.23 mislabels the results of a partial fetch
    // list (values come back in model order under the first N output names). Times in epoch ms:
    // this thread's performance.now() has an origin of its own.
    const start = performance.timeOrigin + performance.now();
    const results = await session.run(feeds, msg.quiet ? QUIET_RUN : {});
    const end = performance.timeOrigin + performance.now();
    const outputs = [];
    const transfer = [];
    for (const name of msg.fetches) {
      const t = results[name];
      if (!t) throw new Error(`ONNX Runtime returned no output '${name}'`);
      outputs.push({ name, type: t.type, dims: Array.from(t.dims), data: t.data });
      if (!Array.isArray(t.data) && !transfer.includes(t.data.buffer)) transfer.push(t.data.buffer);
    }
    parentPort.postMessage({ kind: 'result', id: msg.id, outputs, start, end }, transfer);
  } catch (e) {
    parentPort.postMessage({ kind: 'run-error', id: msg.id, message: e instanceof Error ? e.message : String(e) });
  }
}

async function close() {
  if (session) await session.release();
  session = undefined;
  parentPort.postMessage({ kind: 'closed' });
}

parentPort.on('message', (msg) => {
  if (msg.kind === 'run') void run(msg);
  else if (msg.kind === 'close') void close();
});

void load();

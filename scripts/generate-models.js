#!/usr/bin/env node
'use strict';
// Writes the example ONNX models (models/) and the test models (test/fixtures/onnx/), each as
// `<dir>/1/model.onnx` (+ `<dir>/config.pbtxt` where the model has one), then loads every model in
// onnxruntime-node and checks its results. Output is deterministic: re-running writes the same bytes.
// Usage: node scripts/generate-models.js [--check]   (--check: fail if a file on disk differs)
const fs = require('node:fs');
const path = require('node:path');
const { MODELS: EXAMPLE_MODELS } = require('./onnx/example-models');
const { LOAD_PROBE_MODELS } = require('./onnx/load-probe-models');
const { SEQUENCE_MODELS } = require('./onnx/sequence-models');
const { verifyModel } = require('./onnx/verify');

const root = path.resolve(__dirname, '..');

/** Writes `content` to `file` unless identical; returns whether the file changed. */
function writeIfChanged(file, content) {
  const bytes = Buffer.isBuffer(content) ? content : Buffer.from(content);
  if (fs.existsSync(file) && fs.readFileSync(file).equals(bytes)) return false;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, bytes);
  return true;
}

const MODELS = [...EXAMPLE_MODELS, ...LOAD_PROBE_MODELS, ...SEQUENCE_MODELS];

async function main() {
  const checkOnly = process.argv.includes('--check');
  let stale = 0;
  for (const model of MODELS) {
    const dir = path.join(root, model.dir);
    const modelFile = path.join(dir, '1', 'model.onnx');
    const bytes = Buffer.from(model.build());
    const files = [[modelFile, bytes]];
    if (model.config !== null) files.push([path.join(dir, 'config.pbtxt'), model.config]);
    for (const [file, content] of files) {
      const changed = checkOnly ? !sameContent(file, content) : writeIfChanged(file, content);
      if (changed) stale++;
      console.log(`${changed ? (checkOnly ? 'stale  ' : 'wrote  ') : 'same   '}${path.relative(root, file)}`);
    }
    const verified = model.verifyBuild ? Buffer.from(model.verifyBuild()) : checkOnly ? bytes : modelFile;
    await verifyModel(verified, model.check);
  }
  console.log(`verified ${MODELS.length} models with onnxruntime-node`);
  if (checkOnly && stale > 0) {
    console.error(`${stale} file(s) differ from the generator's output: run npm run models`);
    process.exit(1);
  }
}

function sameContent(file, content) {
  return fs.existsSync(file) && fs.readFileSync(file).equals(Buffer.from(content));
}

main().catch((e) => {
  console.error(e instanceof Error ? e.stack : e);
  process.exit(1);
});

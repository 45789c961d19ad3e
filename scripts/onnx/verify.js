'use strict';
// Loads each generated model in onnxruntime-node and checks that it computes what it should.
const assert = require('node:assert/strict');
const ort = require('onnxruntime-node');
const { mlpReference, MLP_WIDTH } = require('./example-models');

async function checkSimple(session) {
  const a = Int32Array.from({ length: 32 }, (_, i) => i);
  const b = Int32Array.from({ length: 32 }, (_, i) => 100 - 3 * i);
  const r = await session.run({
    INPUT0: new ort.Tensor('int32', a, [2, 16]),
    INPUT1: new ort.Tensor('int32', b, [2, 16]),
  });
  assert.deepEqual(r.OUTPUT0.dims, [2, 16]);
  assert.deepEqual(Array.from(r.OUTPUT0.data), Array.from(a, (v, i) => v + b[i]));
  assert.deepEqual(Array.from(r.OUTPUT1.data), Array.from(a, (v, i) => v - b[i]));
}

async function checkMlp(session) {
  const x = Float32Array.from({ length: 2 * MLP_WIDTH }, (_, i) => Math.sin(i / 7));
  const r = await session.run({ INPUT: new ort.Tensor('float32', x, [2, MLP_WIDTH]) });
  assert.deepEqual(r.OUTPUT.dims, [2, MLP_WIDTH]);
  for (let row = 0; row < 2; row++) {
    const want = mlpReference(x.subarray(row * MLP_WIDTH, (row + 1) * MLP_WIDTH));
    want.forEach((v, i) => {
      const got = r.OUTPUT.data[row * MLP_WIDTH + i];
      assert.ok(Math.abs(got - v) <= 1e-3 * (1 + Math.abs(v)), `mlp row ${row} [${i}]: ${got} != ${v}`);
    });
  }
}

const NUMERIC_ARRAYS = {
  float32: Float32Array, float64: Float64Array, int32: Int32Array, uint32: Uint32Array,
  int16: Int16Array, uint16: Uint16Array, int8: Int8Array, uint8: Uint8Array,
};

/** One small value per ORT type, shaped [1, 2]. */
function sampleFor(type) {
  switch (type) {
    case 'string': return ['hello', 'wörld'];
    case 'bool': return Uint8Array.from([1, 0]);
    case 'float16': return Uint16Array.from([0x3c00, 0xc000]); // 1.0, -2.0
    case 'int64': return BigInt64Array.from([-5n, 1n << 40n]);
    case 'uint64': return BigUint64Array.from([7n, 1n << 50n]);
    default:
      return NUMERIC_ARRAYS[type].from([1, 2]);
  }
}

async function checkIdentity(session) {
  const feeds = {};
  session.inputMetadata.forEach((m) => { feeds[m.name] = new ort.Tensor(m.type, sampleFor(m.type), [1, 2]); });
  const r = await session.run(feeds);
  session.inputNames.forEach((name, i) => {
    const out = r[session.outputNames[i]];
    assert.equal(out.type, feeds[name].type, `${name} type`);
    assert.deepEqual(Array.from(out.data), Array.from(feeds[name].data), `${name} data`);
  });
}

async function checkAdd(session) {
  const a = Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8]);
  const b = Float32Array.from([0.5, 0.5, 0.5, 0.5, 1, 1, 1, 1]);
  const r = await session.run({ A: new ort.Tensor('float32', a, [2, 4]), B: new ort.Tensor('float32', b, [2, 4]) });
  assert.deepEqual(Array.from(r.SUM.data), Array.from(a, (v, i) => v + b[i]));
  assert.deepEqual(Array.from(r.DIFF.data), Array.from(a, (v, i) => v - b[i]));
}

async function checkScale(session) {
  const x = Float32Array.from([1, 2, 3, 4, 5, 6]);
  const r = await session.run({ X: new ort.Tensor('float32', x, [2, 3]) });
  assert.deepEqual(Array.from(r.Y.data), Array.from(x, (v) => v * 2));
}

const CHECKS = { simple: checkSimple, mlp: checkMlp, identity: checkIdentity, add: checkAdd, scale: checkScale };

/** `check`: a name in CHECKS, or a function of the session. */
async function verifyModel(file, check) {
  const session = await ort.InferenceSession.create(file);
  try {
    await (typeof check === 'function' ? check : CHECKS[check])(session);
  } finally {
    await session.release();
  }
}

module.exports = { verifyModel };

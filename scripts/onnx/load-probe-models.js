'use strict';
// Test models for what happens while a model loads (test/fixtures/onnx/): the load-time probe must
// feed each model data it can take, and keep onnxruntime quiet. simple_string is Triton's example
// of that name on ONNX (strings parsed as integers, added and subtracted, written back as
// strings); sequence_start has an ONNX input, START, that its config names only as a sequence
// control (the sequence batcher would fill it).
const assert = require('node:assert/strict');
const ort = require('onnxruntime-node');
const { ELEM, valueInfo, node, encodeModel } = require('./onnx-builder');
const { INT32_IO, ioBlock, sequenceControl, tensor } = require('./configs');

function simpleStringModel() {
  const dims = ['batch', 16];
  return encodeModel({
    graphName: 'simple_string',
    docString: 'OUTPUT0 = str(int(INPUT0) + int(INPUT1)), OUTPUT1 = str(int(INPUT0) - int(INPUT1))',
    nodes: [
      node('Cast', ['INPUT0'], ['a'], { to: ELEM.INT32 }),
      node('Cast', ['INPUT1'], ['b'], { to: ELEM.INT32 }),
      node('Add', ['a', 'b'], ['sum']),
      node('Sub', ['a', 'b'], ['diff']),
      node('Cast', ['sum'], ['OUTPUT0'], { to: ELEM.STRING }),
      node('Cast', ['diff'], ['OUTPUT1'], { to: ELEM.STRING }),
    ],
    inputs: [valueInfo('INPUT0', ELEM.STRING, dims), valueInfo('INPUT1', ELEM.STRING, dims)],
    outputs: [valueInfo('OUTPUT0', ELEM.STRING, dims), valueInfo('OUTPUT1', ELEM.STRING, dims)],
  });
}

const SIMPLE_STRING_CONFIG = [
  'name: "simple_string"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n',
  ioBlock('input', [tensor('INPUT0', 'TYPE_STRING', [16]), tensor('INPUT1', 'TYPE_STRING', [16])]),
  ioBlock('output', [tensor('OUTPUT0', 'TYPE_STRING', [16]), tensor('OUTPUT1', 'TYPE_STRING', [16])]),
].join('');

async function checkSimpleString(session) {
  const a = Array.from({ length: 16 }, (_, i) => String(i));
  const b = Array.from({ length: 16 }, () => '1');
  const r = await session.run({ INPUT0: new ort.Tensor('string', a, [1, 16]), INPUT1: new ort.Tensor('string', b, [1, 16]) });
  assert.deepEqual(r.OUTPUT0.data, a.map((v) => String(Number(v) + 1)));
  assert.deepEqual(r.OUTPUT1.data, a.map((v) => String(Number(v) - 1)));
}

function sequenceStartModel() {
  const dims = ['batch', 1];
  return encodeModel({
    graphName: 'sequence_start',
    docString: 'OUTPUT = INPUT * START (START: the sequence batcher\'s start flag)',
    nodes: [node('Mul', ['INPUT', 'START'], ['OUTPUT'])],
    inputs: [valueInfo('INPUT', ELEM.INT32, dims), valueInfo('START', ELEM.INT32, dims)],
    outputs: [valueInfo('OUTPUT', ELEM.INT32, dims)],
  });
}

const SEQUENCE_START_CONFIG = `name: "sequence_start"
backend: "onnxruntime"
max_batch_size: 8
sequence_batching {
  control_input [
${sequenceControl('START', 'CONTROL_SEQUENCE_START')}
  ]
}
${INT32_IO}`;

async function checkSequenceStart(session) {
  const r = await session.run({
    INPUT: new ort.Tensor('int32', Int32Array.from([3, 4]), [2, 1]),
    START: new ort.Tensor('int32', Int32Array.from([1, 0]), [2, 1]),
  });
  assert.deepEqual(Array.from(r.OUTPUT.data), [3, 0]);
}

const LOAD_PROBE_MODELS = [
  { dir: 'test/fixtures/onnx/simple_string', build: simpleStringModel, config: SIMPLE_STRING_CONFIG, check: checkSimpleString },
  { dir: 'test/fixtures/onnx/sequence_start', build: sequenceStartModel, config: SEQUENCE_START_CONFIG, check: checkSequenceStart },
];

module.exports = { LOAD_PROBE_MODELS };

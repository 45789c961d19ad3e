'use strict';
// Stateful (sequence-batched) ONNX models: the example `accumulator` (models/: direct strategy, an
// implicit state tensor carries the running sum between a sequence's requests) and the test models
// equivalent to Triton's documentation examples `simple_sequence` and `simple_dyna_sequence`
// (test/fixtures/onnx/). Every control and state tensor is an ordinary graph input or output: the
// sequence batcher fills the controls and the state for each row, clients send INPUT only
// (parameters sequence_id / sequence_start / sequence_end), as Triton's own clients do.
const assert = require('node:assert/strict');
const ort = require('onnxruntime-node');
const { ELEM, valueInfo, node, initializer, encodeModel } = require('./onnx-builder');
const { INT32_IO, sequenceControl } = require('./configs');

/**
 * The accumulator: with START the sum restarts at 0, a READY row adds INPUT to the sum carried in
 * ACC_IN and writes it to OUTPUT and ACC_OUT; a row with READY=0 (a direct-strategy padding slot)
 * passes ACC_IN through unchanged.
 *   prev    = ACC_IN * (1 - START)
 *   summed  = prev + INPUT
 *   ACC_OUT = OUTPUT = READY ? summed : ACC_IN
 * `batching`: inputs shaped [batch, 1] (max_batch_size > 0) or [1] (max_batch_size 0).
 */
function accumulatorModel(batching = true) {
  const dims = batching ? ['batch', 1] : [1];
  return encodeModel({
    graphName: 'accumulator',
    docString: 'OUTPUT = ACC_OUT = READY ? ACC_IN * (1 - START) + INPUT : ACC_IN (INT32, implicit state ACC_IN -> ACC_OUT)',
    nodes: [
      node('Sub', ['ONE', 'START'], ['keep']),
      node('Mul', ['ACC_IN', 'keep'], ['prev']),
      node('Add', ['prev', 'INPUT'], ['summed']),
      node('Cast', ['READY'], ['ready_bool'], { to: ELEM.BOOL }),
      node('Where', ['ready_bool', 'summed', 'ACC_IN'], ['ACC_OUT']),
      node('Identity', ['ACC_OUT'], ['OUTPUT']),
    ],
    initializers: [initializer('ONE', ELEM.INT32, [], new Int32Array([1]))],
    inputs: ['INPUT', 'START', 'READY', 'ACC_IN'].map((n) => valueInfo(n, ELEM.INT32, dims)),
    outputs: ['OUTPUT', 'ACC_OUT'].map((n) => valueInfo(n, ELEM.INT32, dims)),
  });
}

/**
 * Triton's `simple_sequence` with batching (qa/common/gen_qa_sequence_models.py, what its example
 * clients expect): OUTPUT = READY ? INPUT + START : 0. No state: Triton's batching variant cannot
 * hold an accumulator in the graph, and its clients expect 1 for the first request [0, 11, 7, ...].
 */
function simpleSequenceModel() {
  const dims = ['batch', 1];
  return encodeModel({
    graphName: 'simple_sequence',
    docString: 'OUTPUT = READY ? INPUT + START : 0 (INT32)',
    nodes: [node('Add', ['INPUT', 'START'], ['sum']), node('Mul', ['sum', 'READY'], ['OUTPUT'])],
    inputs: ['INPUT', 'START', 'READY'].map((n) => valueInfo(n, ELEM.INT32, dims)),
    outputs: [valueInfo('OUTPUT', ELEM.INT32, dims)],
  });
}

/**
 * Triton's `simple_dyna_sequence` with batching (qa/common/gen_qa_dyna_sequence_models.py, what
 * simple_grpc_sequence_stream_infer_client.py -d expects): OUTPUT = READY ? INPUT + START +
 * END * int32(CORRID) : 0, CORRID a UINT64 control.
 */
function simpleDynaSequenceModel() {
  const dims = ['batch', 1];
  return encodeModel({
    graphName: 'simple_dyna_sequence',
    docString: 'OUTPUT = READY ? INPUT + START + END * int32(CORRID) : 0 (INT32, CORRID UINT64)',
    nodes: [
      node('Cast', ['CORRID'], ['corrid_i32'], { to: ELEM.INT32 }),
      node('Mul', ['END', 'corrid_i32'], ['end_corrid']),
      node('Add', ['INPUT', 'START'], ['with_start']),
      node('Add', ['with_start', 'end_corrid'], ['sum']),
      node('Mul', ['sum', 'READY'], ['OUTPUT']),
    ],
    inputs: [
      ...['INPUT', 'START', 'END', 'READY'].map((n) => valueInfo(n, ELEM.INT32, dims)),
      valueInfo('CORRID', ELEM.UINT64, dims),
    ],
    outputs: [valueInfo('OUTPUT', ELEM.INT32, dims)],
  });
}

/**
 * config.pbtxt of the accumulator. `strategy`: the text of the strategy block (`direct { }` or an
 * `oldest { ... }`), `idleUs`: max_sequence_idle_microseconds, `maxBatchSize` 0 for the
 * one-request-per-execution variant (bench/sequence-batching).
 */
function accumulatorConfig({ name = 'accumulator', maxBatchSize = 8, strategy = 'direct { }', idleUs = 5000000, instances = 1 } = {}) {
  return `# Running sum of INPUT per sequence, kept by the server as implicit state (ACC_IN -> ACC_OUT).
# Send INPUT only, with the parameters sequence_id, sequence_start (first request) and sequence_end.
name: "${name}"
backend: "onnxruntime"
max_batch_size: ${maxBatchSize}
sequence_batching {
  max_sequence_idle_microseconds: ${idleUs}
  ${strategy}
  control_input [
${sequenceControl('START', 'CONTROL_SEQUENCE_START')},
${sequenceControl('READY', 'CONTROL_SEQUENCE_READY')}
  ]
  state [
    {
      input_name: "ACC_IN"
      output_name: "ACC_OUT"
      data_type: TYPE_INT32
      dims: [ 1 ]
      initial_state: {
        data_type: TYPE_INT32
        dims: [ 1 ]
        zero_data: true
        name: "zero"
      }
    }
  ]
}
${INT32_IO}instance_group [
  {
    count: ${instances}
    kind: KIND_CPU
  }
]
`;
}

/** The same graph without a sequence batcher: the client sends START, READY and ACC_IN itself. */
function accumulatorPlainConfig(name = 'accumulator_plain') {
  const t = (n) => `  {\n    name: "${n}"\n    data_type: TYPE_INT32\n    dims: [ 1 ]\n  }`;
  return `name: "${name}"
backend: "onnxruntime"
max_batch_size: 8
input [
${['INPUT', 'START', 'READY', 'ACC_IN'].map(t).join(',\n')}
]
output [
${['OUTPUT', 'ACC_OUT'].map(t).join(',\n')}
]
instance_group [
  {
    count: 1
    kind: KIND_CPU
  }
]
`;
}

/** Triton's docs/examples/model_repository/simple_sequence/config.pbtxt. */
const SIMPLE_SEQUENCE_CONFIG = `name: "simple_sequence"
platform: "onnxruntime_onnx"
max_batch_size: 8
sequence_batching {
  control_input [
${sequenceControl('START', 'CONTROL_SEQUENCE_START')},
${sequenceControl('READY', 'CONTROL_SEQUENCE_READY')}
  ]
}
${INT32_IO}instance_group [
  {
    kind: KIND_CPU
  }
]
`;

/** Triton's docs/examples/model_repository/simple_dyna_sequence/config.pbtxt, on onnxruntime. */
const SIMPLE_DYNA_SEQUENCE_CONFIG = `name: "simple_dyna_sequence"
platform: "onnxruntime_onnx"
max_batch_size: 8
sequence_batching {
  max_sequence_idle_microseconds: 10000000
  oldest {
    max_candidate_sequences: 1024
    max_queue_delay_microseconds: 10000
  }
  control_input [
${sequenceControl('START', 'CONTROL_SEQUENCE_START')},
${sequenceControl('END', 'CONTROL_SEQUENCE_END')},
${sequenceControl('READY', 'CONTROL_SEQUENCE_READY')},
${sequenceControl('CORRID', 'CONTROL_SEQUENCE_CORRID', 'data_type: TYPE_UINT64')}
  ]
}
${INT32_IO}instance_group [
  {
    count: 2
    kind: KIND_CPU
  }
]
`;

const i32 = (values, dims) => new ort.Tensor('int32', Int32Array.from(values), dims);

async function checkAccumulator(session) {
  // Rows: a START row, a running row, a padding row (READY 0), a START row with a stale state.
  const r = await session.run({
    INPUT: i32([5, 3, 9, 4], [4, 1]),
    START: i32([1, 0, 0, 1], [4, 1]),
    READY: i32([1, 1, 0, 1], [4, 1]),
    ACC_IN: i32([77, 10, 42, 8], [4, 1]),
  });
  assert.deepEqual(Array.from(r.OUTPUT.data), [5, 13, 42, 4]);
  assert.deepEqual(Array.from(r.ACC_OUT.data), [5, 13, 42, 4]);
  assert.deepEqual(r.OUTPUT.dims, [4, 1]);
}

async function checkAccumulatorNoBatch(session) {
  const r = await session.run({ INPUT: i32([6], [1]), START: i32([0], [1]), READY: i32([1], [1]), ACC_IN: i32([4], [1]) });
  assert.deepEqual(Array.from(r.OUTPUT.data), [10]);
}

async function checkSimpleSequence(session) {
  const r = await session.run({ INPUT: i32([0, 11, 7], [3, 1]), START: i32([1, 0, 0], [3, 1]), READY: i32([1, 1, 0], [3, 1]) });
  assert.deepEqual(Array.from(r.OUTPUT.data), [1, 11, 0]);
}

async function checkSimpleDynaSequence(session) {
  const r = await session.run({
    INPUT: i32([0, 1, 1, 5], [4, 1]),
    START: i32([1, 0, 0, 0], [4, 1]),
    END: i32([0, 1, 1, 0], [4, 1]),
    READY: i32([1, 1, 1, 0], [4, 1]),
    // 2^32 + 1001: only the low 32 bits count (Triton's models cast CORRID to INT32).
    CORRID: new ort.Tensor('uint64', BigUint64Array.from([1000n, 1001n, (1n << 32n) + 1001n, 7n]), [4, 1]),
  });
  assert.deepEqual(Array.from(r.OUTPUT.data), [1, 1002, 1002, 0]);
}

const SEQUENCE_MODELS = [
  { dir: 'models/accumulator', build: accumulatorModel, config: accumulatorConfig(), check: checkAccumulator },
  {
    // The accumulator with a short idle time: a sequence left alone for 300 ms loses its slot.
    dir: 'test/fixtures/onnx/accumulator_short_idle',
    build: accumulatorModel,
    config: accumulatorConfig({ name: 'accumulator_short_idle', idleUs: 300000 }),
    check: checkAccumulator,
  },
  { dir: 'test/fixtures/onnx/simple_sequence', build: simpleSequenceModel, config: SIMPLE_SEQUENCE_CONFIG, check: checkSimpleSequence },
  { dir: 'test/fixtures/onnx/simple_dyna_sequence', build: simpleDynaSequenceModel, config: SIMPLE_DYNA_SEQUENCE_CONFIG, check: checkSimpleDynaSequence },
];

module.exports = {
  SEQUENCE_MODELS, accumulatorModel, accumulatorConfig, accumulatorPlainConfig, checkAccumulator, checkAccumulatorNoBatch,
};

'use strict';
// The example models served by `npm start` (models/) and the small models the tests use
// (test/fixtures/onnx/). Each entry says where it goes, how to build it, its config.pbtxt (null:
// none, so auto-complete is exercised) and how to check that onnxruntime computes it right.
const { ELEM, valueInfo, node, initializer, encodeModel } = require('./onnx-builder');
const { mulberry32 } = require('./prng');
const { simpleConfig, mlpConfig, identityConfig, identityTypesConfig } = require('./configs');

const MLP_WIDTH = 512;
const MLP_LAYERS = 4;

function simpleModel() {
  const dims = ['batch', 16];
  return encodeModel({
    graphName: 'simple',
    docString: 'OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1 (INT32)',
    nodes: [node('Add', ['INPUT0', 'INPUT1'], ['OUTPUT0']), node('Sub', ['INPUT0', 'INPUT1'], ['OUTPUT1'])],
    inputs: [valueInfo('INPUT0', ELEM.INT32, dims), valueInfo('INPUT1', ELEM.INT32, dims)],
    outputs: [valueInfo('OUTPUT0', ELEM.INT32, dims), valueInfo('OUTPUT1', ELEM.INT32, dims)],
  });
}

/** Weights of the MLP: Glorot-uniform from a fixed seed, so every run writes the same bytes. */
function mlpWeights() {
  const next = mulberry32(0x6e657265); // "nere"
  const limit = Math.sqrt(6 / (MLP_WIDTH + MLP_WIDTH));
  const layers = [];
  for (let l = 0; l < MLP_LAYERS; l++) {
    const w = new Float32Array(MLP_WIDTH * MLP_WIDTH);
    for (let i = 0; i < w.length; i++) w[i] = (next() * 2 - 1) * limit;
    const b = new Float32Array(MLP_WIDTH);
    for (let i = 0; i < b.length; i++) b[i] = (next() * 2 - 1) * 0.01;
    layers.push({ w, b });
  }
  return layers;
}

function mlpModel() {
  const layers = mlpWeights();
  const nodes = [];
  const initializers = [];
  let x = 'INPUT';
  layers.forEach(({ w, b }, l) => {
    const last = l === layers.length - 1;
    const gemmOut = last ? 'OUTPUT' : `gemm_${l}`;
    initializers.push(initializer(`W${l}`, ELEM.FLOAT, [MLP_WIDTH, MLP_WIDTH], w));
    initializers.push(initializer(`B${l}`, ELEM.FLOAT, [MLP_WIDTH], b));
    nodes.push(node('Gemm', [x, `W${l}`, `B${l}`], [gemmOut], { transB: 1 }));
    if (!last) {
      nodes.push(node('Relu', [gemmOut], [`relu_${l}`]));
      x = `relu_${l}`;
    }
  });
  const dims = ['batch', MLP_WIDTH];
  return encodeModel({
    graphName: 'mlp',
    docString: `${MLP_LAYERS}-layer ${MLP_WIDTH}-wide FP32 MLP (Gemm + Relu)`,
    nodes,
    initializers,
    inputs: [valueInfo('INPUT', ELEM.FLOAT, dims)],
    outputs: [valueInfo('OUTPUT', ELEM.FLOAT, dims)],
  });
}

/** Reference MLP forward pass for one row (float64 accumulation). */
function mlpReference(row) {
  let x = Array.from(row);
  mlpWeights().forEach(({ w, b }, l) => {
    const y = new Array(MLP_WIDTH);
    for (let o = 0; o < MLP_WIDTH; o++) {
      let acc = b[o];
      for (let i = 0; i < MLP_WIDTH; i++) acc += x[i] * w[o * MLP_WIDTH + i];
      y[o] = l === MLP_LAYERS - 1 ? acc : Math.max(0, acc);
    }
    x = y;
  });
  return x;
}

function identityModel(graphName, pairs) {
  return encodeModel({
    graphName,
    nodes: pairs.map(([, input, output]) => node('Identity', [input], [output])),
    inputs: pairs.map(([elem, input]) => valueInfo(input, elem, ['batch', 'n'])),
    outputs: pairs.map(([elem, , output]) => valueInfo(output, elem, ['batch', 'n'])),
  });
}

function autocompleteAddModel() {
  const dims = ['batch', 4];
  return encodeModel({
    graphName: 'autocomplete_add',
    nodes: [node('Add', ['A', 'B'], ['SUM']), node('Sub', ['A', 'B'], ['DIFF'])],
    inputs: [valueInfo('A', ELEM.FLOAT, dims), valueInfo('B', ELEM.FLOAT, dims)],
    outputs: [valueInfo('SUM', ELEM.FLOAT, dims), valueInfo('DIFF', ELEM.FLOAT, dims)],
  });
}

/** Fixed first dimension: the model cannot batch, auto-complete must give max_batch_size 0. */
function fixedScaleModel() {
  return encodeModel({
    graphName: 'fixed_scale',
    nodes: [node('Mul', ['X', 'TWO'], ['Y'])],
    initializers: [initializer('TWO', ELEM.FLOAT, [], new Float32Array([2]))],
    inputs: [valueInfo('X', ELEM.FLOAT, [2, 3])],
    outputs: [valueInfo('Y', ELEM.FLOAT, [2, 3])],
  });
}

/** [ONNX elem type, KServe datatype] for each input/output pair of the identity_types model. */
const TYPED_IO = [
  [ELEM.BOOL, 'BOOL'], [ELEM.UINT8, 'UINT8'], [ELEM.UINT16, 'UINT16'], [ELEM.UINT32, 'UINT32'],
  [ELEM.UINT64, 'UINT64'], [ELEM.INT8, 'INT8'], [ELEM.INT16, 'INT16'], [ELEM.INT32, 'INT32'],
  [ELEM.INT64, 'INT64'], [ELEM.FLOAT16, 'FP16'], [ELEM.FLOAT, 'FP32'], [ELEM.DOUBLE, 'FP64'],
  [ELEM.STRING, 'BYTES'], [ELEM.BFLOAT16, 'BF16'],
];

const TYPED_CONTENTS_IO = TYPED_IO.filter(([e]) => e !== ELEM.FLOAT16 && e !== ELEM.BFLOAT16);

const MODELS = [
  { dir: 'models/simple', build: simpleModel, config: simpleConfig(), check: 'simple' },
  { dir: 'models/mlp', build: mlpModel, config: mlpConfig(MLP_WIDTH), check: 'mlp' },
  {
    dir: 'test/fixtures/onnx/identity_fp32',
    build: () => identityModel('identity_fp32', [[ELEM.FLOAT, 'INPUT0', 'OUTPUT0']]),
    config: identityConfig('identity_fp32', 'TYPE_FP32'),
    check: 'identity',
  },
  {
    dir: 'test/fixtures/onnx/identity_bytes',
    build: () => identityModel('identity_bytes', [[ELEM.STRING, 'INPUT0', 'OUTPUT0']]),
    config: identityConfig('identity_bytes', 'TYPE_STRING'),
    check: 'identity',
  },
  {
    dir: 'test/fixtures/onnx/identity_types',
    build: () => identityModel('identity_types', TYPED_IO.map(([e, n]) => [e, `IN_${n}`, `OUT_${n}`])),
    // onnxruntime-node cannot open a model with BF16 graph inputs or outputs (the server opens it
    // rewritten, see libs/backends/src/onnxruntime/bf16-graph.ts): the check runs the other pairs.
    verifyBuild: () => identityModel(
      'identity_types',
      TYPED_IO.filter(([e]) => e !== ELEM.BFLOAT16).map(([e, n]) => [e, `IN_${n}`, `OUT_${n}`]),
    ),
    config: identityTypesConfig(TYPED_IO.map(([, n]) => n)),
    check: 'identity',
  },
  {
    // identity_types without FP16/BF16: gRPC typed contents have no field for those, and a request
    // either sends every input as typed contents or none (the datatype matrix test).
    dir: 'test/fixtures/onnx/identity_typed_contents',
    build: () => identityModel('identity_typed_contents', TYPED_CONTENTS_IO.map(([e, n]) => [e, `IN_${n}`, `OUT_${n}`])),
    config: identityTypesConfig(TYPED_CONTENTS_IO.map(([, n]) => n), 'identity_typed_contents'),
    check: 'identity',
  },
  { dir: 'test/fixtures/onnx/autocomplete_add', build: autocompleteAddModel, config: null, check: 'add' },
  { dir: 'test/fixtures/onnx/fixed_scale', build: fixedScaleModel, config: null, check: 'scale' },
];

module.exports = { MODELS, mlpReference, MLP_WIDTH };

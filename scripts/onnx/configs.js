'use strict';
// config.pbtxt texts of the generated models (protobuf text format, as Triton's examples write them).

function tensor(name, dataType, dims) {
  return `  {\n    name: "${name}"\n    data_type: ${dataType}\n    dims: [ ${dims.join(', ')} ]\n  }`;
}

function ioBlock(kind, tensors) {
  return `${kind} [\n${tensors.join(',\n')}\n]\n`;
}

/** One entry of a sequence_batching control_input list (indented for that list). */
function sequenceControl(name, kind, values = 'int32_false_true: [ 0, 1 ]') {
  return `    {\n      name: "${name}"\n      control [\n        {\n          kind: ${kind}\n          ${values}\n        }\n      ]\n    }`;
}

/** The input and output blocks of a model with one INT32 [ 1 ] INPUT and one OUTPUT. */
const INT32_IO = ioBlock('input', [tensor('INPUT', 'TYPE_INT32', [1])]) + ioBlock('output', [tensor('OUTPUT', 'TYPE_INT32', [1])]);

function simpleConfig() {
  return [
    'name: "simple"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n',
    ioBlock('input', [tensor('INPUT0', 'TYPE_INT32', [16]), tensor('INPUT1', 'TYPE_INT32', [16])]),
    ioBlock('output', [tensor('OUTPUT0', 'TYPE_INT32', [16]), tensor('OUTPUT1', 'TYPE_INT32', [16])]),
  ].join('');
}

function mlpConfig(width) {
  return [
    'name: "mlp"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 64\n',
    ioBlock('input', [tensor('INPUT', 'TYPE_FP32', [width])]),
    ioBlock('output', [tensor('OUTPUT', 'TYPE_FP32', [width])]),
    'dynamic_batching {\n  max_queue_delay_microseconds: 100\n}\n',
    'instance_group [\n  {\n    count: 1\n    kind: KIND_CPU\n  }\n]\n',
  ].join('');
}

function identityConfig(name, dataType) {
  return [
    `name: "${name}"\nbackend: "onnxruntime"\nmax_batch_size: 8\n`,
    ioBlock('input', [tensor('INPUT0', dataType, [-1])]),
    ioBlock('output', [tensor('OUTPUT0', dataType, [-1])]),
  ].join('');
}

/** `names` are KServe datatypes; BYTES is TYPE_STRING in a config. */
function identityTypesConfig(names, modelName = 'identity_types') {
  const configType = (n) => (n === 'BYTES' ? 'TYPE_STRING' : `TYPE_${n}`);
  return [
    `name: "${modelName}"\nbackend: "onnxruntime"\nmax_batch_size: 8\n`,
    ioBlock('input', names.map((n) => tensor(`IN_${n}`, configType(n), [-1]))),
    ioBlock('output', names.map((n) => tensor(`OUT_${n}`, configType(n), [-1]))),
  ].join('');
}

module.exports = { tensor, ioBlock, sequenceControl, INT32_IO, simpleConfig, mlpConfig, identityConfig, identityTypesConfig };

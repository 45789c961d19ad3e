'use strict';
// Jest runs each test file in its own vm context, so `Float32Array` inside a test is not the
// `Float32Array` that native addons (onnxruntime-node) create their results with, and `instanceof`
// checks inside those libraries fail. Sharing the outer realm's binary types fixes that; it changes
// nothing else about the sandbox.
const { TestEnvironment } = require('jest-environment-node');

const SHARED = [
  'ArrayBuffer', 'SharedArrayBuffer', 'DataView', 'Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array',
  'Uint16Array', 'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array',
];

class SharedBinaryTypesEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    for (const name of SHARED) this.global[name] = globalThis[name];
  }
}

module.exports = SharedBinaryTypesEnvironment;

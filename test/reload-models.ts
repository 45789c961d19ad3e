/**
 * Models for the reload tests: a tiny ONNX model whose answer names what was loaded (Y = X +
 * STAMP, FP32 [batch, 1]), written into a repository folder as a test goes.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

// The same protobuf writer `npm run models` uses (plain Node, deterministic bytes).
// eslint-disable-next-line @typescript-eslint/no-var-requires
const onnx = require('../scripts/onnx/onnx-builder.js') as {
  ELEM: Record<string, number>;
  valueInfo(name: string, elem: number, dims: (number | string)[]): unknown;
  node(op: string, inputs: string[], outputs: string[]): unknown;
  initializer(name: string, elem: number, dims: number[], data: Float32Array): unknown;
  encodeModel(m: { graphName: string; nodes: unknown[]; inputs: unknown[]; outputs: unknown[]; initializers?: unknown[] }): Uint8Array;
};

/** ONNX bytes of Y = X + stamp. */
export function stampModel(stamp: number): Uint8Array {
  const { ELEM, valueInfo, node, initializer, encodeModel } = onnx;
  return encodeModel({
    graphName: `stamp_${stamp}`,
    nodes: [node('Add', ['X', 'STAMP'], ['Y'])],
    initializers: [initializer('STAMP', ELEM.FLOAT, [], new Float32Array([stamp]))],
    inputs: [valueInfo('X', ELEM.FLOAT, ['batch', 1])],
    outputs: [valueInfo('Y', ELEM.FLOAT, ['batch', 1])],
  });
}

export interface StampConfig {
  name: string;
  /** Extra config text (version_policy, dynamic_batching, model_warmup, default_model_filename...). */
  extra?: string;
  maxBatchSize?: number;
}

export function stampConfig({ name, extra = '', maxBatchSize = 8 }: StampConfig): string {
  return [
    `name: "${name}"`,
    'backend: "onnxruntime"',
    `max_batch_size: ${maxBatchSize}`,
    'input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]',
    'output [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]',
    // The model runs in microseconds: on the event loop, whatever a busy machine makes the load's
    // timing probe measure (a worker thread per instance would make each load slow to start).
    'parameters { key: "session_thread" value: { string_value: "event_loop" } }',
    extra,
  ].join('\n');
}

export function writeConfig(repo: string, config: StampConfig): void {
  mkdirSync(path.join(repo, config.name), { recursive: true });
  writeFileSync(path.join(repo, config.name, 'config.pbtxt'), stampConfig(config));
}

/** Writes `<model>/<version>/<file>`: a stamp model, or the given bytes (a corrupt model). */
export function writeVersion(repo: string, model: string, version: number, content: number | Uint8Array | string, file = 'model.onnx'): void {
  const dir = path.join(repo, model, String(version));
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, file), typeof content === 'number' ? stampModel(content) : content);
}

export function removeVersion(repo: string, model: string, version: number): void {
  rmSync(path.join(repo, model, String(version)), { recursive: true, force: true });
}

/** The request body for the stamp model: one row holding `x`. */
export function stampRequest(x = 0): { inputs: { name: string; shape: number[]; datatype: string; data: number[] }[] } {
  return { inputs: [{ name: 'X', shape: [1, 1], datatype: 'FP32', data: [x] }] };
}

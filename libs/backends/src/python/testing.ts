/* Helpers for the python backend's own tests (real stub processes, hand-made LoadContexts). */
import * as path from 'node:path';
import type { ModelConfig } from '@nereid/model-config';
import type { InferenceError, InferenceRequest, InferenceResponse, ResponseSink } from '@nereid/protocol';
import type { Tensor } from '@nereid/tensor';
import type { InferFn, LoadContext, ModelInstance } from '../backend';

export const REPO_ROOT = path.resolve(__dirname, '../../../..');
export const FIXTURES = path.join(REPO_ROOT, 'test/fixtures/python');
export const MODELS = path.join(REPO_ROOT, 'models');

type Io = [name: string, dataType: string, dims: number[]];

/** A completed config as the core would hand it over. */
export function config(name: string, inputs: Io[], outputs: Io[], extra: ModelConfig = {}): ModelConfig {
  return {
    name,
    backend: 'python',
    max_batch_size: 0,
    input: inputs.map(([n, t, d]) => ({ name: n, data_type: t, dims: d })),
    output: outputs.map(([n, t, d]) => ({ name: n, data_type: t, dims: d })),
    instance_group: [{ name: `${name}_0`, kind: 'KIND_CPU', count: 1 }],
    default_model_filename: 'model.py',
    parameters: {},
    ...extra,
  };
}

export interface LogLine {
  level: string;
  message: string;
}

export function loadContext(root: string, cfg: ModelConfig, logs: LogLine[] = [], infer?: InferFn): LoadContext {
  const modelDir = path.join(root, cfg.name ?? '');
  return {
    config: cfg,
    modelDir,
    versionDir: path.join(modelDir, '1'),
    version: 1,
    instance: { name: `${cfg.name}_0_0`, kind: 'KIND_CPU', deviceId: 0 },
    infer,
    log: (level, message) => logs.push({ level, message }),
  };
}

export function f32(name: string, values: number[], shape: number[] = [values.length]): Tensor {
  return { name, datatype: 'FP32', shape, data: Float32Array.from(values) };
}

export function i32(name: string, values: number[], shape: number[] = [values.length]): Tensor {
  return { name, datatype: 'INT32', shape, data: Int32Array.from(values) };
}

export function bytes(name: string, values: string[], shape: number[] = [values.length]): Tensor {
  return { name, datatype: 'BYTES', shape, data: values.map((v) => new Uint8Array(Buffer.from(v))) };
}

export function text(t: Tensor | undefined): string[] {
  if (!t || !Array.isArray(t.data)) throw new Error(`not a BYTES tensor: ${t?.name}`);
  return t.data.map((d) => Buffer.from(d).toString('utf8'));
}

export function values(t: Tensor | undefined): number[] {
  if (!t || Array.isArray(t.data)) throw new Error(`not a numeric tensor: ${t?.name}`);
  return Array.from(t.data as ArrayLike<number | bigint>, (v) => Number(v));
}

export function request(modelName: string, inputs: Tensor[], extra: Partial<InferenceRequest> = {}): InferenceRequest {
  return {
    id: '', modelName, modelVersion: -1, inputs, parameters: {}, sequenceId: 0n,
    sequenceStart: false, sequenceEnd: false, priority: 0, timeoutUs: 0, ...extra,
  };
}

/** Collects what a model sends for one request. */
export class CollectingSink implements ResponseSink {
  readonly responses: InferenceResponse[] = [];
  error?: InferenceError;
  finals = 0;
  readonly done: Promise<void>;
  private resolve!: () => void;

  constructor() {
    this.done = new Promise((r) => (this.resolve = r));
  }

  send(response: InferenceResponse | undefined, final: boolean): void {
    if (response) this.responses.push(response);
    if (final) {
      this.finals++;
      this.resolve();
    }
  }

  fail(error: InferenceError): void {
    this.error = error;
    this.resolve();
  }

  output(name: string, index = 0): Tensor | undefined {
    return this.responses[index]?.outputs.find((t) => t.name === name);
  }
}

/** Runs one batch and waits until every request got its final answer. */
export async function run(instance: ModelInstance, requests: InferenceRequest[]): Promise<CollectingSink[]> {
  const sinks = requests.map(() => new CollectingSink());
  await instance.execute(requests.map((r, i) => ({ request: r, sink: sinks[i] })));
  await Promise.all(sinks.map((s) => s.done));
  return sinks;
}

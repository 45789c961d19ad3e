// Helpers shared by the onnxruntime backend's spec files (real sessions on the generated models).
import * as path from 'node:path';
import type { ModelConfig } from '@nereid/model-config';
import { newInferenceRequest, type ExecutionItem, type InferenceError, type InferenceRequest, type InferenceResponse, type RequestedOutput } from '@nereid/protocol';
import type { Tensor } from '@nereid/tensor';
import type { InstanceSpec, LoadContext } from '../backend';

export const REPO_ROOT = path.resolve(__dirname, '../../../..');
export const FIXTURES = path.join(REPO_ROOT, 'test/fixtures/onnx');
export const MODELS = path.join(REPO_ROOT, 'models');

export function loadContext(
  modelDir: string,
  config: ModelConfig,
  instance: Partial<InstanceSpec> = {},
): LoadContext {
  return {
    config,
    modelDir,
    versionDir: path.join(modelDir, '1'),
    version: 1,
    instance: { name: `${config.name ?? 'model'}_0`, kind: 'KIND_CPU', deviceId: 0, ...instance },
    log: () => undefined,
  };
}

export function request(modelName: string, inputs: Tensor[], outputs?: string[], id = ''): InferenceRequest {
  const r = newInferenceRequest(modelName, -1);
  r.id = id;
  r.inputs = inputs;
  r.outputs = outputs?.map((name): RequestedOutput => ({ name }));
  return r;
}

/** An execution item whose sink settles `result` with the final response or the error. */
export interface Probe {
  item: ExecutionItem;
  result: Promise<InferenceResponse | InferenceError>;
}

export function probe(req: InferenceRequest): Probe {
  let settle: (r: InferenceResponse | InferenceError) => void = () => undefined;
  const result = new Promise<InferenceResponse | InferenceError>((resolve) => {
    settle = resolve;
  });
  const item: ExecutionItem = {
    request: req,
    sink: {
      send: (response, final) => {
        if (final && response) settle(response);
      },
      fail: (error) => settle(error),
    },
  };
  return { item, result };
}

export function int32(name: string, shape: number[], values: number[]): Tensor {
  return { name, datatype: 'INT32', shape, data: Int32Array.from(values) };
}

export function fp32(name: string, shape: number[], values: number[]): Tensor {
  return { name, datatype: 'FP32', shape, data: Float32Array.from(values) };
}

export function outputOf(r: InferenceResponse | InferenceError, name: string): Tensor {
  if (!('outputs' in r)) throw new Error(`expected a response, got error ${r.code}: ${r.message}`);
  const t = r.outputs.find((o) => o.name === name);
  if (!t) throw new Error(`no output ${name} in response`);
  return t;
}

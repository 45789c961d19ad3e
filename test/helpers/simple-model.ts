import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ROOT } from './server';

/** models/simple's ONNX file (INPUT0 + INPUT1, INPUT0 - INPUT1; INT32 [16], batched), for load overrides. */
export const SIMPLE_ONNX = readFileSync(path.join(ROOT, 'models/simple/1/model.onnx'));

const TENSOR = (name: string) => ({ name, data_type: 'TYPE_INT32', dims: [16] });

/** models/simple's configuration as the JSON a load request's `config` parameter carries. */
export const SIMPLE_CONFIG = JSON.stringify({
  backend: 'onnxruntime',
  max_batch_size: 8,
  input: [TENSOR('INPUT0'), TENSOR('INPUT1')],
  output: [TENSOR('OUTPUT0'), TENSOR('OUTPUT1')],
});

/** An ensemble of one step through `simple`: SUM = A + B. */
export const ENSEMBLE_PBTXT = `name: "ens_simple"
platform: "ensemble"
max_batch_size: 8
input [ { name: "A" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "B" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "SUM" data_type: TYPE_INT32 dims: [ 16 ] } ]
ensemble_scheduling { step [ {
  model_name: "simple" model_version: -1
  input_map { key: "INPUT0" value: "A" } input_map { key: "INPUT1" value: "B" }
  output_map { key: "OUTPUT0" value: "SUM" }
} ] }
`;

/** A gRPC ModelInfer request for models/simple with zeros in both inputs (raw contents), `id` its request id. */
export function simpleZerosGrpc(id = ''): { id: string; model_name: string; inputs: unknown[]; raw_input_contents: Buffer[] } {
  return {
    id,
    model_name: 'simple',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: ['1', '16'] },
      { name: 'INPUT1', datatype: 'INT32', shape: ['1', '16'] },
    ],
    raw_input_contents: [Buffer.alloc(64), Buffer.alloc(64)],
  };
}

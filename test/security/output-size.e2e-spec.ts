/**
 * Issue 16: nothing bounded the size of a response's outputs: a small request to a model that
 * answers with a large output made the server encode (and, as JSON, amplify) all of it. With
 * --max-output-size the response is refused before it is encoded, with a clear error, over HTTP
 * JSON, HTTP binary, gRPC and the gRPC stream, and counted as a failure in the model's statistics.
 * The model here is python: OUTPUT0 is `n` float32 zeros for an INPUT0 of [n].
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { call, callError, inferenceClient, openInferStream, type Client, type Msg } from '../helpers/grpc-client';
import { getJson, makeRepository, postJson, startTestServer } from '../helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const CAP = 4096;
const TOO_LARGE =
  "the response of model 'amplify' holds 4100 bytes of output data, more than the maximum allowed output size of 4096 bytes. Use --max-output-size to increase the limit.";

const MODEL_PY = `import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            n = int(pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()[0])
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", np.zeros(n, dtype=np.float32))]))
        return out
`;

let server: Server;
let client: Client;

beforeAll(async () => {
  const repo = makeRepository({});
  mkdirSync(path.join(repo, 'amplify', '1'), { recursive: true });
  writeFileSync(
    path.join(repo, 'amplify', 'config.pbtxt'),
    'name: "amplify"\nbackend: "python"\nmax_batch_size: 0\n' +
      'input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n',
  );
  writeFileSync(path.join(repo, 'amplify', '1', 'model.py'), MODEL_PY);
  server = await startTestServer({ modelRepositories: [repo], maxOutputSize: CAP });
  client = inferenceClient(server.grpcPort);
}, 60_000);

afterAll(async () => {
  client?.close();
  await server?.close();
});

const httpInfer = (n: number, binary = false) =>
  postJson(`${server.http}/v2/models/amplify/infer`, {
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1], data: [n] }],
    ...(binary ? { parameters: { binary_data_output: true } } : {}),
  });

const grpcRequest = (n: number): Msg => ({
  model_name: 'amplify',
  inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1] }],
  raw_input_contents: [Buffer.from(Int32Array.of(n).buffer)],
});

async function inferenceStats(): Promise<{ success: number; fail: number }> {
  const body = (await getJson(`${server.http}/v2/models/amplify/stats`)).body as Msg;
  const s = body.model_stats[0].inference_stats;
  return { success: s.success.count, fail: s.fail.count };
}

it('HTTP JSON and binary: a response over the bound is refused (400), one at the bound answered', async () => {
  const ok = await httpInfer(1024);
  expect(ok.status).toBe(200);
  expect(ok.body.outputs[0].shape).toEqual([1024]);
  expect(await httpInfer(1025)).toMatchObject({ status: 400, body: { error: TOO_LARGE } });
  expect((await httpInfer(1024, true)).status).toBe(200);
  expect(await httpInfer(1025, true)).toMatchObject({ status: 400, body: { error: TOO_LARGE } });
});

it('gRPC unary and stream: refused with INVALID_ARGUMENT / error_message, one at the bound answered', async () => {
  const ok = await call(client, 'ModelInfer', grpcRequest(1024));
  expect(ok.raw_output_contents[0].length).toBe(CAP);
  const e = await callError(client, 'ModelInfer', grpcRequest(1025));
  expect({ code: e.code, details: e.details }).toEqual({ code: grpc.status.INVALID_ARGUMENT, details: TOO_LARGE });
  const { stream, messages, done } = openInferStream(client);
  stream.write({ ...grpcRequest(1025), id: 'big' });
  stream.write({ ...grpcRequest(8), id: 'small' });
  stream.end();
  await done;
  expect(messages.find((m) => m.error_message !== '')).toMatchObject({ error_message: TOO_LARGE });
  expect(messages.find((m) => m.infer_response?.id === 'small')?.infer_response.raw_output_contents[0].length).toBe(32);
});

it('counts each refused response as a failure, and the server stays up', async () => {
  // 4 refused (HTTP JSON, HTTP binary, gRPC, stream) and 4 answered so far.
  expect(await inferenceStats()).toEqual({ success: 4, fail: 4 });
  expect((await getJson(`${server.http}/v2/health/live`)).status).toBe(200);
});

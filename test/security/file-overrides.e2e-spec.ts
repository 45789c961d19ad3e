/**
 * Repository loads with `file:` parameters write files the server then runs: refused over both
 * protocols unless the server was started with --allow-model-file-overrides.
 */
import * as grpc from '@grpc/grpc-js';
import { call, inferenceClient, type Client } from '../helpers/grpc-client';
import { getJson, makeRepository, postJson, startTestServer } from '../helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const REFUSAL = "model file overrides are disabled: 'file:' load parameters write files the server then runs. Start the server with '--allow-model-file-overrides=true' to allow them.";
const CONFIG = JSON.stringify({ name: 'pwned', backend: 'python', max_batch_size: 0 });
const PAYLOAD = Buffer.from('import os\nos.system("touch /tmp/pwned")\n');

let server: Server;
let client: Client;

beforeAll(async () => {
  server = await startTestServer({ modelRepositories: [makeRepository({ simple: 'models/simple' })], modelControlMode: 'explicit' });
  client = inferenceClient(server.grpcPort);
});

afterAll(async () => {
  client?.close();
  await server?.close();
});

it('refuses file overrides over HTTP by default, naming the flag', async () => {
  const r = await postJson(`${server.http}/v2/repository/models/pwned/load`, {
    parameters: { config: CONFIG, 'file:1/model.py': PAYLOAD.toString('base64') },
  });
  expect(r).toMatchObject({ status: 400, body: { error: REFUSAL } });
  const index = await postJson(`${server.http}/v2/repository/index`, {});
  expect(index.body).not.toContainEqual(expect.objectContaining({ name: 'pwned' }));
  expect((await getJson(`${server.http}/v2/models/pwned/ready`)).status).not.toBe(200);
});

it('refuses file overrides over gRPC by default, naming the flag', async () => {
  await expect(
    call(client, 'RepositoryModelLoad', {
      model_name: 'pwned',
      parameters: { config: { string_param: CONFIG }, 'file:1/model.py': { bytes_param: PAYLOAD } },
    }),
  ).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: REFUSAL });
});

it('still loads from the repository without file parameters', async () => {
  expect((await postJson(`${server.http}/v2/repository/models/simple/load`, {})).status).toBe(200);
  await expect(call(client, 'RepositoryModelLoad', { model_name: 'simple' })).resolves.toBeDefined();
});

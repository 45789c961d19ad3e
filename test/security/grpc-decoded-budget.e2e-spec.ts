/**
 * A gRPC ModelInfer message is charged to the budget of request bytes held at once
 * (--http-max-inflight-body-bytes) at what it costs decoded, before protobufjs decodes it (issue 16):
 * 12,000 one-byte bytes_contents entries are 36 KB on the wire (within what a small message may take
 * from the budget's reserve) but ~3 MB decoded (request-scan.ts). While an HTTP body holds the whole
 * budget such a message is refused with RESOURCE_EXHAUSTED and the budget's words, ordinary small
 * requests are still served, and once the budget has room it is answered.
 */
import * as grpc from '@grpc/grpc-js';
import { call, inferenceClient, type Client, type Msg } from '../helpers/grpc-client';
import { holdBudget } from '../helpers/budget-holder';
import { simpleZerosGrpc } from '../helpers/simple-model';
import { until } from '../helpers/poll';
import { makeRepository, startTestServer } from '../helpers/server';

const BUDGET = 1024 * 1024;
const words = `the server holds its limit of ${BUDGET} bytes of request bodies (--http-max-inflight-body-bytes); try again later`;

const N = 12_000;
const tiny: Msg = {
  model_name: 'identity_bytes',
  inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: ['1', String(N)], contents: { bytes_contents: new Array(N).fill(Buffer.from('a')) } }],
};
const simple = simpleZerosGrpc();

describe('gRPC messages are charged to the body budget at their decoded cost (issue 16)', () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;
  let client: Client;

  beforeAll(async () => {
    server = await startTestServer({
      modelRepositories: [makeRepository({ simple: 'models/simple', identity_bytes: 'test/fixtures/onnx/identity_bytes' })],
      allowMetrics: false,
      httpMaxInflightBodyBytes: BUDGET,
      httpRequestTimeoutSecs: 30,
    });
    client = inferenceClient(server.grpcPort);
  });

  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it('refuses a message of many tiny entries while the budget is full, serves small requests, and answers it once there is room', async () => {
    // Alone, it is answered (a message may exceed the budget while nothing else is held).
    expect((await call(client, 'ModelInfer', tiny)).outputs[0].name).toBe('OUTPUT0');
    const holder = await holdBudget(server.httpPort, BUDGET);
    try {
      for (let i = 0; i < 3; i++) {
        await expect(call(client, 'ModelInfer', tiny)).rejects.toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED, details: words });
      }
      for (let i = 0; i < 3; i++) expect((await call(client, 'ModelInfer', simple)).outputs.map((o: Msg) => o.name)).toContain('OUTPUT0');
    } finally {
      holder.destroy();
    }
    await until('the budget to have room', () => call(client, 'ModelInfer', tiny).then(() => true, () => false));
  }, 30_000);
});

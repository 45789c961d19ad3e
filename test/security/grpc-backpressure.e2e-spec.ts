import { call, inferenceClient, type Client, type Msg } from '../helpers/grpc-client';
import { makeRepository, startTestServer } from '../helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const request: Msg = {
  model_name: 'simple',
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], contents: { int_contents: Array.from({ length: 16 }, (_, i) => i) } },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], contents: { int_contents: Array.from({ length: 16 }, () => 1) } },
  ],
};

async function successCount(client: Client): Promise<number> {
  const stats = await call(client, 'ModelStatistics', { name: 'simple' });
  return Number(stats.model_stats[0].inference_stats.success.count);
}

describe('gRPC streaming back-pressure (issue 16, attack 1)', () => {
  let server: Server;
  let client: Client;

  beforeAll(async () => {
    server = await startTestServer({ modelRepositories: [makeRepository({ simple: 'models/simple' })], allowMetrics: false });
    client = inferenceClient(server.grpcPort);
  });

  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it('stalls only a stream whose client sends without reading the answers', async () => {
    const before = await successCount(client);
    // A client of its own (its own HTTP/2 connection), which never reads what the server sends.
    const flooder = inferenceClient(server.grpcPort);
    const stream = flooder.ModelStreamInfer();
    stream.pause();
    stream.on('error', () => undefined);
    let sent = 0;
    const deadline = Date.now() + 2000;
    await new Promise<void>((resolve) => {
      const pump = (): void => {
        while (Date.now() < deadline) {
          sent++;
          if (!stream.write({ ...request, id: String(sent) })) return void stream.once('drain', pump);
        }
        resolve();
      };
      pump();
      setTimeout(resolve, 2200);
    });
    // A well-behaved client is served meanwhile, promptly.
    const t0 = Date.now();
    const answer = await call(client, 'ModelInfer', request);
    expect(answer.outputs).toHaveLength(2);
    expect(Date.now() - t0).toBeLessThan(3000);
    // Whatever the server took in has run by now.
    await new Promise((r) => setTimeout(r, 1000));
    const ran = (await successCount(client)) - before;
    stream.cancel();
    flooder.close();
    // The flooder's requests stop being taken once the answers back up: bounded by HTTP/2 windows
    // and the per-stream bound, not by its send rate.
    expect(ran).toBeLessThan(20_000);
    expect(sent).toBeLessThan(100_000);
  });

  it('still answers every request of a stream that reads', async () => {
    const stream = client.ModelStreamInfer();
    const ids = new Set<string>();
    const done = new Promise<void>((resolve, reject) => {
      stream.on('data', (m: Msg) => {
        expect(m.error_message).toBe('');
        ids.add(m.infer_response.id);
      });
      stream.on('end', () => resolve());
      stream.on('error', reject);
    });
    for (let i = 0; i < 300; i++) stream.write({ ...request, id: `s${i}` });
    stream.end();
    await done;
    expect(ids.size).toBe(300);
  });
});

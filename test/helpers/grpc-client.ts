import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ROOT, startTestServer } from './server';

/** A decoded message of Triton's .proto files, as @grpc/proto-loader hands it over. */
export type Msg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
export type Client = grpc.Client & Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const definition = protoLoader.loadSync(['grpc_service.proto', 'health.proto'], {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [path.join(ROOT, 'proto')],
});
const loaded = grpc.loadPackageDefinition(definition) as any; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * A GRPCInferenceService client on 127.0.0.1:`port` loading the .proto files dynamically, as any
 * generated client would. grpc-js's default metadata limits apply (8 KiB soft, like gRPC's C core).
 */
export function inferenceClient(port: number): Client {
  return new loaded.inference.GRPCInferenceService(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': -1,
    'grpc.max_send_message_length': -1,
  });
}

/** A grpc.health.v1.Health client on 127.0.0.1:`port`. */
export function healthClient(port: number): Client {
  return new loaded.grpc.health.v1.Health(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
}

export function call(client: Client, method: string, request: Msg, metadata = new grpc.Metadata()): Promise<Msg> {
  return new Promise((resolve, reject) => {
    client[method](request, metadata, (err: grpc.ServiceError | null, res: Msg) => (err ? reject(err) : resolve(res)));
  });
}

export async function callError(client: Client, method: string, request: Msg): Promise<grpc.ServiceError> {
  try {
    await call(client, method, request);
  } catch (e) {
    return e as grpc.ServiceError;
  }
  throw new Error(`${method} unexpectedly succeeded`);
}

type TestServer = Awaited<ReturnType<typeof startTestServer>>;

/** A test server and a gRPC inference client on it. */
/** A ModelStreamInfer stream, the messages it has sent so far, and a promise of its end (rejected on an error). */
export function openInferStream(client: Client): { stream: grpc.ClientDuplexStream<Msg, Msg>; messages: Msg[]; done: Promise<void> } {
  const stream = client.ModelStreamInfer() as grpc.ClientDuplexStream<Msg, Msg>;
  const messages: Msg[] = [];
  const done = new Promise<void>((resolve, reject) => {
    stream.on('data', (m: Msg) => messages.push(m));
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  return { stream, messages, done };
}

export interface ServerWithClient {
  server: TestServer;
  client: Client;
}

/** Starts a test server on `repo` and a gRPC inference client on it. */
export async function startWithGrpcClient(repo: string): Promise<ServerWithClient> {
  const server = await startTestServer({ modelRepositories: [repo] });
  return { server, client: inferenceClient(server.grpcPort) };
}

/** Closes the client, then the server, of what `startWithGrpcClient` started (either may be missing). */
export async function closeWithGrpcClient(started: Partial<ServerWithClient>): Promise<void> {
  started.client?.close();
  await started.server?.close();
}

/**
 * A ModelStreamInfer client that reads its answers slowly (issue 16 review, RG): the stream stops
 * reading its requests while its answers wait (back-pressure, stream-infer.ts), and grpc-js stops
 * reading the HTTP/2 stream after every whole message until the next is wanted. A request message
 * that had begun arriving then stays half read because the server holds it, not because the client
 * is slow: the message timeout (--http-request-timeout-secs) must not end such a stream.
 */
import * as http2 from 'node:http2';
import { freePort } from '../helpers/built-server';
import { makeRepository, startTestServer } from '../helpers/server';
import { loadServices } from '../../apps/gateway/src/grpc/proto-loader';

const KiB = 1024;
const MiB = 1024 * KiB;
const TIMEOUT_SECS = 1;

const services = loadServices();
const serialize = services.inference.ModelStreamInfer.requestSerialize as (m: object) => Buffer;

function frame(message: Buffer): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/** Complete gRPC messages in `data` (a response stream's bytes). */
function countFrames(data: Buffer): number {
  let at = 0;
  let n = 0;
  while (at + 5 <= data.length) {
    const len = data.readUInt32BE(at + 1);
    if (at + 5 + len > data.length) break;
    at += 5 + len;
    n++;
  }
  return n;
}

describe('a ModelStreamInfer client that reads its answers slowly (issue 16 review)', () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;

  beforeAll(async () => {
    server = await startTestServer({
      modelRepositories: [makeRepository({ identity_fp32: 'test/fixtures/onnx/identity_fp32' })],
      allowMetrics: false,
      httpPort: await freePort(),
      grpcPort: await freePort(),
      httpRequestTimeoutSecs: TIMEOUT_SECS,
      httpMaxInflightBodyBytes: 256 * MiB,
    });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('answers every request once the client reads, however long the server held the half-read next request', async () => {
    const N = 48;
    const bytes = 100 * KiB + 12;
    const session = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
    try {
      const stream = session.request({
        ':method': 'POST',
        ':path': '/inference.GRPCInferenceService/ModelStreamInfer',
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      stream.on('error', () => undefined);
      const chunks: Buffer[] = [];
      let grpcStatus: string | undefined;
      const take = (h: http2.IncomingHttpHeaders): void => {
        if (h['grpc-status'] !== undefined) grpcStatus = `${String(h['grpc-status'])} ${decodeURIComponent(String(h['grpc-message'] ?? ''))}`;
      };
      stream.on('response', take);
      stream.on('trailers', take);
      const closed = new Promise<void>((resolve) => stream.on('close', () => resolve()));
      // The answers are not read for a while: the server holds reading (its writes back up).
      stream.pause();
      for (let i = 0; i < N; i++) {
        const message = serialize({
          id: String(i),
          model_name: 'identity_fp32',
          inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: ['1', String(bytes / 4)] }],
          raw_input_contents: [Buffer.alloc(bytes, i)],
        });
        stream.write(frame(message));
      }
      stream.end();
      await new Promise((r) => setTimeout(r, TIMEOUT_SECS * 1000 * 3));
      stream.on('data', (d: Buffer) => chunks.push(d));
      stream.resume();
      await closed;
      expect({ grpcStatus, rstCode: stream.rstCode, answers: countFrames(Buffer.concat(chunks)) }).toEqual({ grpcStatus: '0 OK', rstCode: http2.constants.NGHTTP2_NO_ERROR, answers: N });
    } finally {
      session.destroy();
    }
  }, 30_000);
});

/**
 * gRPC streaming back-pressure (issue 16, attack 1), with a client that really stops reading: a raw
 * node:http2 session whose ModelStreamInfer stream is paused and given a small receive window, so
 * that its unread DATA frames hold the server's answers (no WINDOW_UPDATE goes back). grpc-js's own
 * client is no such client: it goes on taking DATA frames into memory while its stream is paused
 * (the audit's probe ran ~20k requests/s for 10 s through one), so a test built on it measured the
 * client, not the server. The server (the built CLI, in its own process, its RSS read from /proc)
 * must stop running the stream's requests once its answers back up, and keep its memory flat,
 * while another client is served promptly.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import * as path from 'node:path';
import * as protoLoader from '@grpc/proto-loader';
import { killChild, startBuiltServer } from '../helpers/built-server';
import { call, type Client, type Msg } from '../helpers/grpc-client';
import { sleep, until } from '../helpers/poll';
import { makeRepository, ROOT } from '../helpers/server';

const request: Msg = {
  model_name: 'simple',
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], contents: { int_contents: Array.from({ length: 16 }, (_, i) => i) } },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], contents: { int_contents: Array.from({ length: 16 }, () => 1) } },
  ],
};

/** One ModelStreamInfer request as gRPC frames it (flag, length, message), 100 times over. */
function framedRequests(): Buffer {
  const definition = protoLoader.loadSync(['grpc_service.proto'], { keepCase: true, longs: String, defaults: true, oneofs: true, includeDirs: [path.join(ROOT, 'proto')] });
  const method = definition['inference.GRPCInferenceService'] as unknown as Record<string, { requestSerialize: (m: Msg) => Buffer }>;
  const message = method.ModelStreamInfer.requestSerialize(request);
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  return Buffer.concat(Array.from({ length: 100 }, () => frame));
}

const rssMiB = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function successCount(client: Client): Promise<number> {
  const stats = await call(client, 'ModelStatistics', { name: 'simple' });
  return Number(stats.model_stats[0].inference_stats.success.count);
}

describe('gRPC streaming back-pressure (issue 16, attack 1)', () => {
  let child: ChildProcess | undefined;
  let client: Client;
  let grpcPort: number;

  beforeAll(async () => {
    ({ child, client, grpcPort } = await startBuiltServer(makeRepository({ simple: 'models/simple' })));
  });

  afterAll(async () => {
    client?.close();
    await killChild(child);
  });

  it('stalls a raw HTTP/2 client that stops reading: its requests stop running, server memory stays flat', async () => {
    const pid = child!.pid!;
    const before = await successCount(client);
    const chunk = framedRequests();
    // Its own connection, a 4 KiB window per stream, and a stream that is never read.
    const session = http2.connect(`http://127.0.0.1:${grpcPort}`, { settings: { initialWindowSize: 4096 } });
    session.on('error', () => undefined);
    const stream = session.request({
      ':method': 'POST',
      ':path': '/inference.GRPCInferenceService/ModelStreamInfer',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    stream.pause();
    stream.on('error', () => undefined);
    let sent = 0;
    let stop = false;
    const pump = (): void => {
      while (!stop) {
        sent += 100;
        if (!stream.write(chunk)) return void stream.once('drain', pump);
      }
    };
    pump();
    try {
      // Whatever the server took in before the answers backed up runs, then the count stops (two
      // looks 500 ms apart agree; without back-pressure it never does); from then on nothing more
      // runs, and nothing more is held.
      let ran1 = -1;
      const t1 = Date.now();
      await until('the stream to stall', async () => {
        const ran = (await successCount(client)) - before;
        const stalled = ran > 0 && ran === ran1;
        ran1 = ran;
        if (!stalled) await sleep(500);
        return stalled;
      }, 15_000);
      const stalledAfter = Date.now() - t1;
      const rss1 = rssMiB(pid);
      await sleep(3000);
      const ran2 = (await successCount(client)) - before;
      const rss2 = rssMiB(pid);
      // A well-behaved client is served meanwhile, promptly.
      const t0 = Date.now();
      const answer = await call(client, 'ModelInfer', request);
      const took = Date.now() - t0;
      console.log(
        `raw non-reading stream: sent ${sent}; ran ${ran1} when it stalled (${stalledAfter} ms) and ${ran2} 3 s later; server RSS ${rss1.toFixed(0)} -> ${rss2.toFixed(0)} MiB; a unary call took ${took} ms`,
      );
      expect(answer.outputs).toHaveLength(2);
      expect(took).toBeLessThan(2000);
      // Bounded by the HTTP/2 windows and the stream's read buffer (~700 requests in the audit), not by the send rate.
      expect(ran2).toBeLessThan(5000);
      expect(ran2 - ran1).toBeLessThan(100);
      expect(sent).toBeLessThan(20_000);
      expect(rss2 - rss1).toBeLessThan(32);
    } finally {
      stop = true;
      stream.destroy();
      session.destroy();
    }
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

import * as net from 'node:net';
import { getJson, makeRepository, startTestServer } from '../helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const body = JSON.stringify({
  inputs: [
    { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, (_, i) => i) },
    { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, () => 1) },
  ],
});
const requestWith = (text: string): string =>
  `POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${text.length}\r\n\r\n${text}`;
const inferRequest = requestWith(body);

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Everything the server writes until it closes the connection (or `until` matches). */
function readAll(socket: net.Socket, until?: (text: string) => boolean): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (until?.(text)) resolve(text);
    });
    socket.on('close', () => resolve(text));
    socket.on('error', () => undefined);
  });
}

const statusLines = (text: string): string[] => text.match(/HTTP\/1\.1 \d{3}/g) ?? [];

async function successCount(server: Server): Promise<number> {
  const { body: stats } = (await getJson(`${server.http}/v2/models/simple/stats`)) as { body: { model_stats: { inference_stats: { success: { count: number } } }[] } };
  return stats.model_stats[0].inference_stats.success.count;
}

describe('HTTP pipelining (issue 16, attack 1)', () => {
  let server: Server;

  beforeAll(async () => {
    server = await startTestServer({ modelRepositories: [makeRepository({ simple: 'models/simple' })], allowMetrics: false });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('answers 40 pipelined requests, each once and in order', async () => {
    const socket = await connect(server.httpPort);
    const requests = Array.from({ length: 40 }, (_, i) => requestWith(body.replace('"inputs"', `"id":"r${i}","inputs"`)));
    const answers = readAll(socket, (t) => (t.match(/"model_name"/g) ?? []).length === 40);
    socket.write(requests.join(''));
    const text = await answers;
    socket.destroy();
    expect(statusLines(text)).toEqual(Array(40).fill('HTTP/1.1 200'));
    expect(text.match(/"id":"r\d+"/g)).toEqual(requests.map((_, i) => `"id":"r${i}"`));
  });

  it('answers valid pipelined requests followed by a malformed one: every request its own answer, in order', async () => {
    const socket = await connect(server.httpPort);
    const answers = readAll(socket);
    socket.write(inferRequest.repeat(3) + 'NOT HTTP AT ALL\r\n\r\n');
    const text = await answers;
    expect(statusLines(text)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200', 'HTTP/1.1 200', 'HTTP/1.1 400']);
    expect(text.endsWith('{"error":"Bad Request"}')).toBe(true);
  });

  it('stalls only a client that pipelines without reading: others are served, and at once after it leaves', async () => {
    const before = await successCount(server);
    const flooder = await connect(server.httpPort);
    flooder.pause();
    flooder.on('error', () => undefined);
    const chunk = Buffer.from(inferRequest.repeat(200));
    let written = 0;
    const deadline = Date.now() + 2000;
    // Write whenever the socket takes more, for 2 s (the attack took in 128 MB in 5 s before the bound).
    await new Promise<void>((resolve) => {
      const pump = (): void => {
        while (Date.now() < deadline) {
          written += chunk.length;
          if (!flooder.write(chunk)) return void flooder.once('drain', pump);
        }
        resolve();
      };
      pump();
      setTimeout(resolve, 2200);
    });
    // Stalled: once the answers fill the socket buffers, the server runs none of the flooder's further
    // requests (without the bound it went on running the requests it had read, and node grew with them).
    // A busy server may still be filling the buffers when the flood stops: wait (up to 8 s) for a 300 ms
    // window in which at most the bound's 16 requests run.
    let servedAtFlood = (await successCount(server)) - before;
    let servedLater = servedAtFlood;
    for (const until = Date.now() + 8000; Date.now() < until; servedAtFlood = servedLater) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      servedLater = (await successCount(server)) - before;
      if (servedLater - servedAtFlood <= 16) break;
    }
    // Meanwhile a well-behaved client is answered.
    const t0 = Date.now();
    const live = await fetch(`${server.http}/v2/health/live`);
    const infer = await fetch(`${server.http}/v2/models/simple/infer`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    const meanwhileMs = Date.now() - t0;
    const served = (await successCount(server)) - before;
    flooder.destroy();
    // What the flooder got in is bounded by the socket buffers and the bound, not by its write rate.
    expect(written).toBeLessThan(16 * 1024 * 1024);
    // With the bound the server runs what the socket buffers take answers for (850 on a busy run, about
    // 9,500 on a quiet one: loopback buffers grow to megabytes), then stops: at most the 16 requests the
    // bound lets start unanswered run after that. Without the bound it ran 624 in 500 ms after the flood
    // and the flooder's writes never blocked (the written check above).
    expect(servedLater - servedAtFlood).toBeLessThanOrEqual(16);
    // And it stopped reading: most of what the flooder wrote still waits unread in the socket buffers
    // (with the bound 9,551 of 22,200 requests ran here; without it 50,801 of 50,800, every one).
    expect(servedLater).toBeLessThan(0.8 * (written / inferRequest.length));
    expect(served).toBeGreaterThanOrEqual(servedLater);
    expect([live.status, infer.status]).toEqual([200, 200]);
    // Generous for a busy machine: without the bound this took 8.6-9 s here.
    expect(meanwhileMs).toBeLessThan(5000);
    const t1 = Date.now();
    expect((await fetch(`${server.http}/v2/health/live`)).status).toBe(200);
    expect(Date.now() - t1).toBeLessThan(5000);
  });
});

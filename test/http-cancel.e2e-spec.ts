/**
 * End-to-end: an HTTP client that goes away before its answer cancels its request. A python model
 * polls `request.is_cancelled()`; the request must end as a CANCELLED failure well before the
 * model's 10 s wait would have answered it.
 */
import * as http from 'node:http';
import * as path from 'node:path';
import { getJson, makeRepository, ROOT, startTestServer } from './helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

describe('HTTP client disconnect', () => {
  let server: Server;
  beforeAll(async () => {
    const repo = makeRepository({ wait_cancel: path.join(ROOT, 'test/fixtures/python/wait_cancel') });
    server = await startTestServer({ modelRepositories: [repo] });
  }, 60_000);
  afterAll(() => server?.close());

  const stats = async () => {
    const r = await getJson(`${server.http}/v2/models/wait_cancel/stats`);
    return (r.body as { model_stats: { inference_stats: Record<string, { count: number }> }[] }).model_stats[0].inference_stats;
  };

  it('cancels the request of a client that closes its connection', async () => {
    const body = JSON.stringify({ inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: [7] }] });
    const req = http.request(`${server.http}/v2/models/wait_cancel/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('error', () => undefined);
    req.end(body);
    await new Promise((r) => setTimeout(r, 300));
    const started = Date.now();
    req.destroy();
    let s = await stats();
    while (s.fail.count === 0 && Date.now() - started < 8000) {
      await new Promise((r) => setTimeout(r, 50));
      s = await stats();
    }
    expect(s.fail.count).toBe(1);
    expect(s.success.count).toBe(0);
    expect(Date.now() - started).toBeLessThan(5000);
  }, 20_000);
});

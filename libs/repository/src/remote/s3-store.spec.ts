import { createServer, type Socket } from 'node:net';
import { withEnv } from '../../../../test/helpers/cloud-emulators';
import { S3Store } from './s3-store';

describe('S3 store', () => {
  it('fails a listing whose endpoint accepts the connection and never answers', async () => {
    const sockets: Socket[] = [];
    const server = createServer((s) => sockets.push(s));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const env = { AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE', AWS_SECRET_ACCESS_KEY: 'secret-example-key', AWS_DEFAULT_REGION: 'us-east-1' };
    const restore = withEnv(env);
    const store = new S3Store(`s3://127.0.0.1:${port}/b/r`, 'b', 'r/', `http://127.0.0.1:${port}`, env, { connectMs: 1000, idleMs: 300 });
    const started = Date.now();
    try {
      const err = await store.list().then(() => undefined, (e: Error) => e);
      expect(err?.message).toMatch(/timed? ?out|socket/i);
      // Three attempts of 300 ms idle each, and the SDK's back-off between them.
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      restore();
      store.close();
      for (const s of sockets) s.destroy();
      server.close();
    }
  });
});

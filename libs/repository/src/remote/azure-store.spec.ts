import { createServer, type Socket } from 'node:net';
import { AzureStore } from './azure-store';

describe('Azure store', () => {
  it('fails a listing whose endpoint accepts the connection and never answers', async () => {
    const sockets: Socket[] = [];
    const server = createServer((s) => sockets.push(s));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const env = {
      AZURE_STORAGE_CONNECTION_STRING:
        `DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=${Buffer.from('key').toString('base64')};` +
        `BlobEndpoint=http://127.0.0.1:${port}/acct;`,
    };
    const store = new AzureStore('as://acct/c/r', 'acct', 'c', 'r/', env, 500);
    const started = Date.now();
    try {
      const err = await store.list().then(() => undefined, (e: Error) => e);
      expect(err?.name).toBe('AbortError');
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      store.close();
      for (const s of sockets) s.destroy();
      server.close();
    }
  });
});

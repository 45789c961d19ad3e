import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createConnection, createServer, type AddressInfo } from 'node:net';

/**
 * A private `redis-server` for a test: on a free loopback port, no persistence, killed by `stop()`.
 * With REDIS_URL set, tests use that server instead (`start` returns it and `stop`/`restart` are
 * not available). Without redis-server on PATH, `start` fails with the words of
 * `scripts/check-prereqs.js --redis`.
 */
export interface RedisServer {
  url: string;
  port: number;
  /** Kills the server (SIGKILL when `hard`), as a crash would. */
  stop(hard?: boolean): Promise<void>;
  /** Starts it again on the same port (empty: nothing was saved). */
  restart(): Promise<void>;
  /** True when the server is REDIS_URL's, not one this helper started. */
  external: boolean;
}

export const REDIS_MISSING =
  'redis-server was not found on PATH: the distributed tests need it (apt-get install redis-server) or REDIS_URL pointing at a Redis server.';

/** Starts a private redis-server (`password`: requirepass). */
export async function startRedis(options: { password?: string } = {}): Promise<RedisServer> {
  const external = process.env.REDIS_URL;
  if (external && !options.password) {
    const port = Number(new URL(external).port || 6379);
    const refuse = async (): Promise<void> => {
      throw new Error('REDIS_URL is set: the test cannot stop or restart that server');
    };
    return { url: external, port, stop: refuse, restart: refuse, external: true };
  }
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) throw new Error(REDIS_MISSING);
  const port = await freePort();
  let child: ChildProcess | undefined;
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  if (options.password) args.push('--requirepass', options.password);
  const launch = async (): Promise<void> => {
    const c = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = c;
    let out = '';
    c.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
    c.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
    const deadline = Date.now() + 10_000;
    while (!(await ping(port, options.password))) {
      if (c.exitCode !== null) throw new Error(`redis-server exited (${c.exitCode}): ${out}`);
      if (Date.now() > deadline) throw new Error(`redis-server did not answer PING within 10 s: ${out}`);
      await new Promise((r) => setTimeout(r, 30));
    }
  };
  const stop = async (hard = false): Promise<void> => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    c.kill(hard ? 'SIGKILL' : 'SIGTERM');
    const timer = setTimeout(() => c.kill('SIGKILL'), 3000);
    await exited;
    clearTimeout(timer);
  };
  await launch();
  const auth = options.password ? `:${encodeURIComponent(options.password)}@` : '';
  return { url: `redis://${auth}127.0.0.1:${port}`, port, stop, restart: launch, external: false };
}

/** Whether a Redis on `port` answers PING (with AUTH first when a password is given). */
function ping(port: number, password?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let got = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => {
      socket.write(password ? `AUTH ${password}\r\nPING\r\n` : 'PING\r\n');
    });
    socket.on('data', (d) => {
      got += d.toString();
      if (got.includes('+PONG')) done(true);
      else if (got.includes('-')) done(false);
    });
  });
}

/** A TCP port free on 127.0.0.1 when asked. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

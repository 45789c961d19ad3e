import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { freePort } from './ports';

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
  /** With `tls`: the PEM certificate of the server's self-signed CA (pass it as `tls.ca`). */
  ca?: string;
}

export const REDIS_MISSING =
  'redis-server was not found on PATH: the distributed tests need it (apt-get install redis-server) or REDIS_URL pointing at a Redis server.';

/**
 * Starts a private redis-server (`password`: requirepass; `tls`: TLS only, with a self-signed
 * certificate for 127.0.0.1 made by openssl, and a `rediss://` URL).
 */
export async function startRedis(options: { password?: string; tls?: boolean } = {}): Promise<RedisServer> {
  const external = process.env.REDIS_URL;
  if (external && !options.password && !options.tls) {
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
  let ca: string | undefined;
  let certDir: string | undefined;
  if (options.tls) {
    certDir = mkdtempSync(path.join(tmpdir(), 'nereid-redis-tls-'));
    const [cert, key] = [path.join(certDir, 'cert.pem'), path.join(certDir, 'key.pem')];
    const made = spawnSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert,
    ], { encoding: 'utf8' });
    if (made.error || made.status !== 0) throw new Error(`openssl could not make a test certificate: ${made.error?.message ?? made.stderr}`);
    ca = readFileSync(cert, 'utf8');
    args.splice(0, 2, '--port', '0', '--tls-port', String(port));
    args.push('--tls-cert-file', cert, '--tls-key-file', key, '--tls-ca-cert-file', cert, '--tls-auth-clients', 'no');
  }
  const launch = async (): Promise<void> => {
    const c = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = c;
    let out = '';
    c.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
    c.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
    const deadline = Date.now() + 10_000;
    while (!(await ping(port, options.password, ca))) {
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
    if (certDir && !hard) rmSync(certDir, { recursive: true, force: true });
  };
  await launch();
  const auth = options.password ? `:${encodeURIComponent(options.password)}@` : '';
  const scheme = options.tls ? 'rediss' : 'redis';
  return { url: `${scheme}://${auth}127.0.0.1:${port}`, port, stop, restart: launch, external: false, ca };
}

/** Whether a Redis on `port` answers PING (with AUTH first when a password is given; over TLS with `ca`). */
function ping(port: number, password?: string, ca?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = ca
      ? tlsConnect({ host: '127.0.0.1', port, ca })
      : createConnection({ host: '127.0.0.1', port });
    const ready = ca ? 'secureConnect' : 'connect';
    let got = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on(ready, () => {
      socket.write(password ? `AUTH ${password}\r\nPING\r\n` : 'PING\r\n');
    });
    socket.on('data', (d) => {
      got += d.toString();
      if (got.includes('+PONG')) done(true);
      else if (got.includes('-')) done(false);
    });
  });
}


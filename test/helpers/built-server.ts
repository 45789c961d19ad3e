/**
 * For the tests that run the built CLI in its own process (`npm run build` first): where it is, and
 * the loopback ports and `serve` arguments that bind its three endpoints there.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { call, inferenceClient, type Client } from './grpc-client';
import { until } from './poll';
import { freePort } from './ports';
import { ROOT } from './server';

/** The built CLI's entry point. */
export const MAIN = path.join(ROOT, 'dist/apps/nereid/src/main.js');

export { freePort };

/** Free loopback ports for HTTP, gRPC and metrics, and the `serve` arguments that use them. */
export async function loopbackPorts(): Promise<{ http: number; args: string[] }> {
  const [http, grpc, metrics] = [await freePort(), await freePort(), await freePort()];
  const args = ['--http-port', String(http), '--grpc-port', String(grpc), '--metrics-port', String(metrics),
    '--http-address', '127.0.0.1', '--grpc-address', '127.0.0.1'];
  return { http, args };
}

/** Kills `child` (SIGKILL) and waits for it to exit; nothing when it has exited already. */
export function killChild(child: ChildProcess | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/**
 * The built CLI serving `repo` in its own process on loopback ports (`extra`: more `serve` flags;
 * metrics off), once its gRPC door answers ServerReady; `client` is a gRPC client of it.
 */
export async function startBuiltServer(
  repo: string,
  extra: string[] = [],
  readyMs = 20_000,
): Promise<{ child: ChildProcess; client: Client; httpPort: number; grpcPort: number }> {
  const { http: httpPort, args } = await loopbackPorts();
  const grpcPort = Number(args[args.indexOf('--grpc-port') + 1]);
  const child = spawn(process.execPath, [MAIN, 'serve', '--model-repository', repo, ...args, '--allow-metrics=false', ...extra], { stdio: 'ignore' });
  const client = inferenceClient(grpcPort);
  await until(
    'the server to be ready',
    async () => {
      if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
      return call(client, 'ServerReady', {}).then(
        (r) => r.ready === true,
        () => false,
      );
    },
    readyMs,
  );
  return { child, client, httpPort, grpcPort };
}

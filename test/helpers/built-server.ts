/**
 * For the tests that run the built CLI in its own process (`npm run build` first): where it is, and
 * the loopback ports and `serve` arguments that bind its three endpoints there.
 */
import type { ChildProcess } from 'node:child_process';
import * as path from 'node:path';
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

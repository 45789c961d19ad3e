/**
 * Distributed-mode processes for end-to-end tests: `nereid serve --role ...` of the built CLI
 * (`npm run build` first) on loopback ports, over a Redis URL, with their output kept; and waits
 * for their readiness.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import { freePort, MAIN } from './built-server';

/**
 * The CLI the roles run: the checkout's build, or `NEREID_E2E_MAIN` (a build kept apart, e.g. of
 * a commit, so that a rebuild of dist/ by someone else cannot change it under a running test).
 */
const ENTRY = process.env.NEREID_E2E_MAIN || MAIN;

export interface RoleProcess {
  role: string;
  child: ChildProcess;
  http: number;
  grpc: number;
  metrics: number;
  /** What the process wrote to stdout and stderr so far. */
  log: () => string;
  /** The id the process logged for `kind` (`gateway-...`, `scheduler-...`, `worker-...`). */
  id: (kind: 'gateway' | 'scheduler' | 'worker') => string | undefined;
  /** Kills it (SIGKILL by default) and waits for its exit. */
  kill: (signal?: NodeJS.Signals) => Promise<void>;
}

export async function startRole(
  role: string,
  redisUrl: string,
  repo: string,
  options: { env?: NodeJS.ProcessEnv; args?: string[] } = {},
): Promise<RoleProcess> {
  const [http, grpc, metrics] = [await freePort(), await freePort(), await freePort()];
  const child = spawn(
    process.execPath,
    [ENTRY, 'serve', '--role', role, '--redis', redisUrl, '--model-repository', repo,
      '--http-port', String(http), '--grpc-port', String(grpc), '--metrics-port', String(metrics),
      '--http-address', '127.0.0.1', '--grpc-address', '127.0.0.1', ...(options.args ?? [])],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...options.env } },
  );
  let out = '';
  const keep = (d: Buffer): void => {
    out += d.toString();
    // Keep the beginning (the ids) and the most recent output.
    if (out.length > 400_000) out = out.slice(0, 20_000) + '\n[...]\n' + out.slice(-200_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return {
    role,
    child,
    http,
    grpc,
    metrics,
    log: () => out,
    id: (kind) => new RegExp(`\\b(${kind}-[\\w.-]+-\\d+-[0-9a-f]{6})\\b`).exec(out)?.[1],
    kill: (signal = 'SIGKILL') =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill(signal);
      }),
  };
}

/** Waits until `r` answers 200 on `path` of its HTTP port (a model's readiness by default). */
export async function roleReady(r: RoleProcess, path = '/v2/models/simple/ready', deadlineMs = 60_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    if (r.child.exitCode !== null) throw new Error(`${r.role} exited (${r.child.exitCode}): ${r.log()}`);
    const ok = await fetch(`http://127.0.0.1:${r.http}${path}`).then((res) => res.status === 200, () => false);
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${r.role} not ready within ${deadlineMs} ms: ${r.log()}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** Waits until `r` has logged its id of `kind`. */
export async function roleId(r: RoleProcess, kind: 'gateway' | 'scheduler' | 'worker', deadlineMs = 60_000): Promise<string> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const id = r.id(kind);
    if (id) return id;
    if (r.child.exitCode !== null) throw new Error(`${r.role} exited (${r.child.exitCode}): ${r.log()}`);
    if (Date.now() > deadline) throw new Error(`${r.role} logged no ${kind} id within ${deadlineMs} ms: ${r.log()}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

/** A test's teardown: kills its role processes, stops its Redis and removes its repository folder. */
export async function stopCluster(roles: RoleProcess[], redis: { stop(): Promise<void> } | undefined, repo: string | undefined): Promise<void> {
  await Promise.all(roles.map((r) => r.kill()));
  await redis?.stop();
  if (repo) fs.rmSync(repo, { recursive: true, force: true });
}

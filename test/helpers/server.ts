import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startNereid, type RunningNereid } from '../../apps/nereid/src/serve';
import type { ServeOptions } from '../../apps/nereid/src/cli-options';

export const ROOT = path.resolve(__dirname, '../..');
export const MODELS = path.join(ROOT, 'models');

/** Starts an embedded Nereid on free loopback ports, quiet unless NEREID_TEST_LOG is set. */
export async function startTestServer(
  options: Partial<ServeOptions> & { modelRepositories: string[] },
): Promise<RunningNereid & { http: string }> {
  const quiet = !process.env.NEREID_TEST_LOG;
  const server = await startNereid({
    httpAddress: '127.0.0.1',
    grpcAddress: '127.0.0.1',
    httpPort: 0,
    grpcPort: 0,
    metricsPort: 0,
    logInfo: !quiet,
    logWarning: !quiet,
    logError: !quiet,
    ...options,
  });
  return { ...server, http: `http://127.0.0.1:${server.httpPort}` };
}

/** The error a server start with `options` fails with; undefined (the server closed again) if it starts. */
export async function startError(options: Parameters<typeof startTestServer>[0]): Promise<Error | undefined> {
  return startTestServer(options).then(
    async (s) => {
      await s.close();
      return undefined;
    },
    (e: Error) => e,
  );
}

/** A temporary repository holding copies of the named model folders (from models/ or absolute paths). */
export function makeRepository(models: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'nereid-e2e-'));
  for (const [name, src] of Object.entries(models)) {
    cpSync(path.isAbsolute(src) ? src : path.join(ROOT, src), path.join(dir, name), { recursive: true });
  }
  return dir;
}

export async function getJson(url: string): Promise<{ status: number; body: unknown }> {
  const r = await fetch(url);
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
}

export async function postJson(url: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any; headers: Headers }> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' || body instanceof Uint8Array ? (body as string) : JSON.stringify(body),
  });
  const text = await r.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* keep text */
  }
  return { status: r.status, body: parsed, headers: r.headers };
}

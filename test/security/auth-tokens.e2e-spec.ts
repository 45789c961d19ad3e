/**
 * --auth-tokens-file: hashed bearer tokens, each opening its own API groups, over HTTP and gRPC;
 * the file is re-read on change without a restart, and fails closed: a group once protected stays
 * protected until restart, and an emptied, removed or garbled file keeps the last good tokens.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { call, inferenceClient, type Client, type Msg } from '../helpers/grpc-client';
import { until } from '../helpers/poll';
import { makeRepository, startError, startTestServer } from '../helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const USER = 'user-token-1';
const ADMIN = 'admin-token-2';

let server: Server;
let client: Client;
let file: string;
let logFile: string;

beforeAll(async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'nereid-tokens-'));
  file = path.join(dir, 'tokens');
  logFile = path.join(dir, 'server.log');
  writeFileSync(file, `# user\n${sha(USER)} inference,metadata\n${sha(ADMIN)} model-config,model-repository,metadata\n`);
  server = await startTestServer({
    modelRepositories: [makeRepository({ simple: 'models/simple' })],
    modelControlMode: 'explicit',
    loadModels: ['simple'],
    authTokensFile: file,
    logFile,
    logWarning: true,
  });
  client = inferenceClient(server.grpcPort);
});

/** The warnings the server logged about the tokens file. */
const warnings = (): string[] => (existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').filter((l) => l.includes('auth tokens file')) : []);

afterAll(async () => {
  client?.close();
  await server?.close();
});

async function get(p: string, token?: string): Promise<{ status: number; body: any; auth: string | null }> {
  const r = await fetch(`${server.http}${p}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined, auth: r.headers.get('www-authenticate') };
}

function grpcCall(method: string, request: Msg, token?: string): Promise<Msg> {
  const md = new grpc.Metadata();
  if (token) md.set('authorization', `Bearer ${token}`);
  return call(client, method, request, md);
}

it('HTTP: 401 without a valid token, 403 for a token without the group, served with one that has it', async () => {
  expect(await get('/v2/models/simple/config')).toEqual({ status: 401, body: { error: 'This API requires a valid bearer token' }, auth: 'Bearer' });
  expect((await get('/v2/models/simple/config', 'not-a-token')).status).toBe(401);
  expect(await get('/v2/models/simple/config', USER)).toMatchObject({ status: 403, body: { error: 'This token does not open this API' } });
  expect((await get('/v2/models/simple/config', ADMIN)).status).toBe(200);
  expect((await get('/v2/models/simple', USER)).status).toBe(200);
  expect((await get('/v2/models/simple', ADMIN)).status).toBe(200);
  expect((await get('/v2/health/ready')).status).toBe(200);
  expect((await get('/v2/logging')).status).toBe(200);
});

it('gRPC: UNAUTHENTICATED, PERMISSION_DENIED, then served', async () => {
  await expect(grpcCall('ModelConfig', { name: 'simple' })).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
  await expect(grpcCall('ModelConfig', { name: 'simple' }, USER)).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED });
  await expect(grpcCall('ModelConfig', { name: 'simple' }, ADMIN)).resolves.toBeDefined();
  await expect(grpcCall('ModelMetadata', { name: 'simple' }, USER)).resolves.toBeDefined();
  await expect(grpcCall('ServerLive', {})).resolves.toMatchObject({ live: true });
});

it('re-reads the file on change without a restart', async () => {
  const NEW = 'rotated-token-3';
  writeFileSync(file, `${sha(NEW)} model-config\n`);
  await until('the rotated token', async () => (await get('/v2/models/simple/config', NEW)).status === 200);
  expect((await get('/v2/models/simple/config', ADMIN)).status).toBe(401);
  await expect(grpcCall('ModelConfig', { name: 'simple' }, NEW)).resolves.toBeDefined();
  // No line names metadata, inference or model-repository any more: they stay protected until
  // restart (a token that lost them is refused, no token is unauthenticated), with a warning.
  expect((await get('/v2/models/simple')).status).toBe(401);
  expect((await get('/v2/models/simple', NEW)).status).toBe(403);
  expect((await fetch(`${server.http}/v2/repository/index`, { method: 'POST' })).status).toBe(401);
  await expect(grpcCall('ModelMetadata', { name: 'simple' })).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
  await until('the warning', () => warnings().some((l) => l.includes('protected until restart')));
  expect((await get('/v2/health/ready')).status).toBe(200);
});

it('fails closed: an emptied, removed or garbled file keeps the last good tokens, with a warning', async () => {
  const NEW = 'rotated-token-3';
  const spoils: Array<[string, () => void]> = [
    ['names no token', () => writeFileSync(file, '')],
    ['cannot read the auth tokens file', () => rmSync(file)],
    ['tokens file line 1', () => writeFileSync(file, 'garbage\n')],
  ];
  for (const [words, spoil] of spoils) {
    const seen = warnings().filter((l) => l.includes(words)).length;
    spoil();
    await until(`the warning '${words}'`, () => warnings().filter((l) => l.includes(words)).length > seen);
    // The audit's probe: emptying the file opened the config and repository APIs to anyone.
    expect((await get('/v2/models/simple/config')).status).toBe(401);
    expect((await fetch(`${server.http}/v2/repository/index`, { method: 'POST' })).status).toBe(401);
    await expect(grpcCall('ModelConfig', { name: 'simple' })).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
    expect((await get('/v2/models/simple/config', NEW)).status).toBe(200);
    expect(warnings().filter((l) => l.includes(words)).every((l) => l.includes('the previous tokens stay'))).toBe(true);
  }
});

it('refuses to start with an empty or missing tokens file', async () => {
  const empty = path.join(path.dirname(file), 'empty');
  writeFileSync(empty, '# nothing yet\n');
  const repo = makeRepository({});
  expect((await startError({ modelRepositories: [repo], authTokensFile: empty }))?.message).toContain('names no token');
  expect((await startError({ modelRepositories: [repo], authTokensFile: `${empty}-missing` }))?.message).toContain('cannot read the auth tokens file');
});

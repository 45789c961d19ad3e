/**
 * --auth-tokens-file: hashed bearer tokens, each opening its own API groups, over HTTP and gRPC;
 * the file is re-read on change without a restart.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { call, inferenceClient, type Client, type Msg } from '../helpers/grpc-client';
import { until } from '../helpers/poll';
import { makeRepository, startTestServer } from '../helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const USER = 'user-token-1';
const ADMIN = 'admin-token-2';

let server: Server;
let client: Client;
let file: string;

beforeAll(async () => {
  file = path.join(mkdtempSync(path.join(tmpdir(), 'nereid-tokens-')), 'tokens');
  writeFileSync(file, `# user\n${sha(USER)} inference,metadata\n${sha(ADMIN)} model-config,model-repository,metadata\n`);
  server = await startTestServer({
    modelRepositories: [makeRepository({ simple: 'models/simple' })],
    modelControlMode: 'explicit',
    loadModels: ['simple'],
    authTokensFile: file,
  });
  client = inferenceClient(server.grpcPort);
});

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
  expect((await get('/v2/models/simple')).status).toBe(200);
  await expect(grpcCall('ModelConfig', { name: 'simple' }, NEW)).resolves.toBeDefined();
});

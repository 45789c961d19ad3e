/**
 * --http-restricted-api and --grpc-restricted-protocol, as Triton answers them: every API group
 * without its header (HTTP 403 / gRPC UNAVAILABLE, naming the header) and with it; a restriction
 * Triton would refuse at start-up (an empty value) is refused.
 */
import { spawnSync } from 'node:child_process';
import * as net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { parseRestriction } from '../../apps/gateway/src/restrictions';
import { call, healthClient, inferenceClient, type Client, type Msg } from '../helpers/grpc-client';
import { loopbackPorts, MAIN } from '../helpers/built-server';
import { makeRepository, startError, startTestServer } from '../helpers/server';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const USER = { key: 'User-Key', value: 'u-secret' };
const ADMIN = { key: 'admin-key', value: 'a-secret:with=marks' };
const USER_GROUPS = 'health,metadata,inference';
const ADMIN_GROUPS = 'shared-memory,model-config,model-repository,statistics,trace,logging';

const ints = (n: number) => Array.from({ length: 16 }, (_, i) => i * n);
const INFER_BODY = {
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: ints(1) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: ints(2) },
  ],
};

/** One request per group: [group, method, path, body, who holds the key]. */
const HTTP_CASES: [string, string, string, unknown, typeof USER][] = [
  ['health', 'GET', '/v2/health/ready', undefined, USER],
  ['metadata', 'GET', '/v2/models/simple', undefined, USER],
  ['inference', 'POST', '/v2/models/simple/infer', INFER_BODY, USER],
  ['shared-memory', 'GET', '/v2/systemsharedmemory/status', undefined, ADMIN],
  ['model-config', 'GET', '/v2/models/simple/config', undefined, ADMIN],
  ['model-repository', 'POST', '/v2/repository/index', {}, ADMIN],
  ['statistics', 'GET', '/v2/models/stats', undefined, ADMIN],
  ['trace', 'GET', '/v2/trace/setting', undefined, ADMIN],
  ['logging', 'GET', '/v2/logging', undefined, ADMIN],
];

const tensor = (name: string, data: number[]) => ({ name, datatype: 'INT32', shape: [1, 16], contents: { int_contents: data } });
const GRPC_CASES: [string, string, Msg, typeof USER][] = [
  ['health', 'ServerReady', {}, USER],
  ['metadata', 'ModelMetadata', { name: 'simple' }, USER],
  ['inference', 'ModelInfer', { model_name: 'simple', inputs: [tensor('INPUT0', ints(1)), tensor('INPUT1', ints(2))] }, USER],
  ['shared-memory', 'SystemSharedMemoryStatus', {}, ADMIN],
  ['model-config', 'ModelConfig', { name: 'simple' }, ADMIN],
  ['model-repository', 'RepositoryIndex', {}, ADMIN],
  ['statistics', 'ModelStatistics', { name: 'simple' }, ADMIN],
  ['trace', 'TraceSetting', {}, ADMIN],
  ['logging', 'LogSettings', {}, ADMIN],
];

let server: Server;
let client: Client;

beforeAll(async () => {
  const restrictions = [parseRestriction(`${USER_GROUPS}:${USER.key}=${USER.value}`), parseRestriction(`${ADMIN_GROUPS}:${ADMIN.key}=${ADMIN.value}`)];
  server = await startTestServer({
    modelRepositories: [makeRepository({ simple: 'models/simple' })],
    modelControlMode: 'explicit',
    loadModels: ['simple'],
    httpRestrictedApis: restrictions,
    grpcRestrictedProtocols: restrictions,
  });
  client = inferenceClient(server.grpcPort);
});

afterAll(async () => {
  client?.close();
  await server?.close();
});

async function httpCall(method: string, path: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const r = await fetch(`${server.http}${path}`, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
}

/** The status line of the answer to a request written as is. */
function rawRequest(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(new URL(server.http).port), '127.0.0.1', () => socket.write(text));
    let got = '';
    socket.on('data', (c: Buffer) => (got += c.toString('latin1')));
    socket.on('end', () => resolve(got.split('\r\n')[0]));
    socket.on('error', reject);
  });
}

describe('HTTP --http-restricted-api', () => {
  it.each(HTTP_CASES)('%s: 403 without the header, served with it', async (_group, method, path, body, holder) => {
    const refused = await httpCall(method, path, body, {});
    expect(refused).toEqual({ status: 403, body: { error: `This API is restricted, expecting header '${holder.key}'` } });
    const wrong = await httpCall(method, path, body, { [holder.key]: `${holder.value}x` });
    expect(wrong.status).toBe(403);
    const other = holder === USER ? ADMIN : USER;
    expect((await httpCall(method, path, body, { [other.key]: other.value })).status).toBe(403);
    const served = await httpCall(method, path, body, { [holder.key]: holder.value });
    expect(served.status).toBe(200);
  });

  it('gives the infer fast path its answer with the header', async () => {
    const served = await httpCall('POST', '/v2/models/simple/infer', INFER_BODY, { [USER.key.toLowerCase()]: USER.value });
    expect(served.body.outputs.find((o: { name: string }) => o.name === 'OUTPUT0').data).toEqual(ints(3));
  });

  it('answers paths that are no route as before', async () => {
    expect((await httpCall('GET', '/v2/nothing', undefined, {})).status).toBe(404);
  });

  it.each([
    '/v2/%6Cogging',
    'http://127.0.0.1/v2/logging',
    '/v2/logging?x=/v2/health/live',
    '//v2/logging',
    '/V2/LOGGING',
    '/v2/logging/',
    '/v2/./logging',
    '/v2/health/../logging',
    '/v2/logging;x',
    '/v2/logging%3Fx',
    '/v2/logging#x',
  ])('serves no restricted group through %s', async (target) => {
    const head = await rawRequest(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    expect(head).not.toMatch(/^HTTP\/1\.1 2/);
  });
});

function grpcCall(method: string, request: Msg, md: Record<string, string>): Promise<Msg> {
  const metadata = new grpc.Metadata();
  for (const [k, v] of Object.entries(md)) metadata.set(k, v);
  return call(client, method, request, metadata);
}

describe('gRPC --grpc-restricted-protocol', () => {
  it.each(GRPC_CASES)('%s: UNAVAILABLE without the metadata, served with it', async (_group, method, request, holder) => {
    const key = `triton-grpc-protocol-${holder.key}`;
    await expect(grpcCall(method, request, {})).rejects.toMatchObject({
      code: grpc.status.UNAVAILABLE,
      details: `This protocol is restricted, expecting header '${key}'`,
    });
    await expect(grpcCall(method, request, { [holder.key]: holder.value })).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
    await expect(grpcCall(method, request, { [key]: holder.value.slice(1) })).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
    await expect(grpcCall(method, request, { [key]: holder.value })).resolves.toBeDefined();
  });

  it('restricts the streaming infer call and grpc.health.v1 Check as well', async () => {
    const key = `triton-grpc-protocol-${USER.key}`;
    const stream = client.ModelStreamInfer(new grpc.Metadata());
    const ended = new Promise<grpc.ServiceError>((resolve) => stream.on('error', resolve));
    stream.on('data', () => undefined);
    stream.write({ model_name: 'simple', inputs: [tensor('INPUT0', ints(1)), tensor('INPUT1', ints(2))] });
    stream.end();
    expect(await ended).toMatchObject({ code: grpc.status.UNAVAILABLE, details: `This protocol is restricted, expecting header '${key}'` });

    const health = healthClient(server.grpcPort);
    try {
      await expect(call(health, 'Check', { service: '' })).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
      const md = new grpc.Metadata();
      md.set(key, USER.value);
      await expect(call(health, 'Check', { service: '' }, md)).resolves.toMatchObject({ status: 'SERVING' });
    } finally {
      health.close();
    }
  });
});

describe('start-up checks, as Triton (ParseGenericConfigOption)', () => {
  // Before, `logging:k=` was taken and a request with an empty `k:` header reached /v2/logging.
  it('refuses a restriction with an empty value', async () => {
    const repo = makeRepository({});
    const error = await startError({ modelRepositories: [repo], httpRestrictedApis: [{ groups: ['logging'], key: 'k', value: '' }] });
    expect(error?.message).toContain("--http-restricted-api option format is '<config name>:<setting>=<value>'. Got logging:k=");
    const grpcError = await startError({ modelRepositories: [repo], grpcRestrictedProtocols: [{ groups: ['logging'], key: 'k', value: '' }] });
    expect(grpcError?.message).toContain("--grpc-restricted-protocol option format is '<config name>:<setting>=<value>'. Got logging:k=");
  });

  // The cases of Triton's qa scripts for these flags: the server must not start, and its log holds these words.
  it.each([
    [['--http-restricted-api=logging:k='], "--http-restricted-api option format is '<config name>:<setting>=<value>'. Got logging:k="],
    [['--grpc-restricted-protocol=logging:k'], "--grpc-restricted-protocol option format is '<config name>:<setting>=<value>'. Got logging:k"],
    [['--http-restricted-api=model-repository,health:k1=v1', '--http-restricted-api=metadata,health:k2=v2'], "restricted api 'health' can not be specified in multiple config groups"],
    [['--grpc-restricted-protocol=model-repository,health:k1=v1', '--grpc-restricted-protocol=metadata,health:k2=v2'], "restricted protocol 'health' can not be specified in multiple config groups"],
    [['--http-restricted-api=model-reposit,health:k1=v1'], "unknown restricted api 'model-reposit'"],
    [['--grpc-restricted-protocol=model-reposit,health:k1=v1'], "unknown restricted protocol 'model-reposit'"],
  ])('the built CLI refuses %p at once with Triton\'s words', async (flags, words) => {
    const { args } = await loopbackPorts();
    const r = spawnSync(process.execPath, [MAIN, 'serve', '--model-repository', makeRepository({}), ...args, ...flags], { encoding: 'utf8', timeout: 20_000 });
    expect(r.status).not.toBe(0);
    expect(r.status).not.toBeNull();
    expect(r.stderr).toContain(words);
  });
});

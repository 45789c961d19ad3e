import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import type { ContainerClient } from '@azure/storage-blob';

const ROOT = path.resolve(__dirname, '../..');

/*
 * Google Cloud Storage has no starter here. The only GCS emulator on npm is the Cloud Storage
 * emulator inside firebase-tools: at start it needs a Java rules-runtime JAR that it downloads from
 * Google (nothing but the npm registry is reachable here). With its rules engine bypassed through
 * firebase-tools' private modules it did answer @google-cloud/storage's list (prefix, generation)
 * and download-by-generation calls, as GcsStore makes them, when tried outside this project; but
 * installing firebase-tools (625 packages) into this project fails in the install script of its
 * nested protobufjs (npm 11: `spawn sh ENOENT`), so it is not a dependency. fake-gcs-server is a Go
 * program, not on npm. test/cloud-gcs.e2e-spec.ts checks only what needs no server.
 */

/** A local cloud-storage server started by a test, and a client to put objects into it. */
export interface CloudEmulator {
  /** Environment variables that point Nereid's SDK clients at the emulator with valid credentials. */
  env: Record<string, string>;
  /** The `--model-repository` path of a folder in the test bucket/container. */
  repository(folder?: string): string;
  put(key: string, data: string | Uint8Array): Promise<void>;
  remove(key: string): Promise<void>;
  /** Uploads every file under a local folder, keys prefixed with `prefix` (`<prefix>/<relative path>`). */
  upload(localDir: string, prefix: string): Promise<void>;
  stop(): Promise<void>;
}

/** Starts a node script as a child process and resolves with the first stdout match of `ready`. */
async function startProcess(args: string[], ready: RegExp, what: string): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start within 45 s: ${out}`)), 45_000);
    const onData = (d: Buffer): void => {
      out += d.toString();
      const m = ready.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}): ${out}`));
    });
  });
  child.removeAllListeners('exit');
  return { child, match };
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}

function filesUnder(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(path.join(dir, rel))) {
    const r = rel ? `${rel}/${name}` : name;
    if (statSync(path.join(dir, r)).isDirectory()) out.push(...filesUnder(dir, r));
    else out.push(r);
  }
  return out;
}

const S3RVER_SCRIPT = `
const S3rver = require('s3rver');
const [dir, bucket] = process.argv.slice(1);
new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: dir, configureBuckets: [{ name: bucket }] })
  .run()
  .then((a) => console.log('S3RVER_PORT=' + a.port));
process.on('SIGTERM', () => process.exit(0));
`;

/** s3rver (npm `s3rver`) in a child process, with one bucket; credentials S3RVER / S3RVER. */
export async function startS3Emulator(bucket = 'models'): Promise<CloudEmulator> {
  const dir = mkdtempSync(path.join(tmpdir(), 'nereid-s3rver-'));
  const { child, match } = await startProcess(['-e', S3RVER_SCRIPT, dir, bucket], /S3RVER_PORT=(\d+)/, 's3rver');
  const port = Number(match[1]);
  const sdk = await import('@aws-sdk/client-s3');
  const client: S3Client = new sdk.S3Client({
    region: 'us-east-1',
    endpoint: `http://127.0.0.1:${port}`,
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    // s3rver does not know the SDK's default CRC32 trailers.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const put = async (key: string, data: string | Uint8Array): Promise<void> => {
    await client.send(new sdk.PutObjectCommand({ Bucket: bucket, Key: key, Body: typeof data === 'string' ? Buffer.from(data) : data }));
  };
  return {
    env: {
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      AWS_DEFAULT_REGION: 'us-east-1',
    },
    repository: (folder = '') => `s3://127.0.0.1:${port}/${bucket}${folder ? `/${folder}` : ''}`,
    put,
    remove: async (key) => {
      await client.send(new sdk.DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
    upload: async (localDir, prefix) => {
      for (const f of filesUnder(localDir)) await put(`${prefix}/${f}`, readFileSync(path.join(localDir, f)));
    },
    stop: async () => {
      client.destroy();
      await stopProcess(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Azurite's well-known development account (public in Azurite's documentation). */
export const AZURITE_ACCOUNT = 'devstoreaccount1';
const AZURITE_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

/** Azurite's blob service (npm `azurite`) in a child process, in memory, with one container. */
export async function startAzureEmulator(container = 'models'): Promise<CloudEmulator> {
  const { child, match } = await startProcess(
    [
      path.join(ROOT, 'node_modules/azurite/dist/src/blob/main.js'),
      '--blobHost', '127.0.0.1', '--blobPort', '0',
      '--inMemoryPersistence', '--skipApiVersionCheck', '--disableTelemetry', '--silent',
    ],
    /successfully listens on http:\/\/127\.0\.0\.1:(\d+)/,
    'azurite',
  );
  const port = Number(match[1]);
  const connectionString =
    `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT};AccountKey=${AZURITE_KEY};` +
    `BlobEndpoint=http://127.0.0.1:${port}/${AZURITE_ACCOUNT};`;
  const sdk = await import('@azure/storage-blob');
  const client: ContainerClient = sdk.BlobServiceClient.fromConnectionString(connectionString).getContainerClient(container);
  await client.create();
  const put = async (key: string, data: string | Uint8Array): Promise<void> => {
    const body = typeof data === 'string' ? Buffer.from(data) : data;
    await client.getBlockBlobClient(key).upload(body, body.length);
  };
  return {
    env: { AZURE_STORAGE_CONNECTION_STRING: connectionString },
    repository: (folder = '') => `as://${AZURITE_ACCOUNT}/${container}${folder ? `/${folder}` : ''}`,
    put,
    remove: async (key) => {
      await client.getBlobClient(key).delete();
    },
    upload: async (localDir, prefix) => {
      for (const f of filesUnder(localDir)) await put(`${prefix}/${f}`, readFileSync(path.join(localDir, f)));
    },
    stop: () => stopProcess(child),
  };
}

/**
 * An emulator started before the enclosing `describe`'s tests, with its environment variables set,
 * and stopped after them; returns the getter of the running emulator.
 */
export function useCloudEmulator(start: () => Promise<CloudEmulator>): () => CloudEmulator {
  let emu: CloudEmulator | undefined;
  let restoreEnv: (() => void) | undefined;
  beforeAll(async () => {
    emu = await start();
    restoreEnv = withEnv(emu.env);
  });
  afterAll(async () => {
    restoreEnv?.();
    await emu?.stop();
  });
  return () => emu!;
}

/** Sets environment variables for the duration of a test file; returns the function that restores them. */
export function withEnv(vars: Record<string, string | undefined>): () => void {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const apply = (v: Record<string, string | undefined>): void => {
    for (const [k, val] of Object.entries(v)) {
      if (val === undefined) delete process.env[k];
      else process.env[k] = val;
    }
  };
  apply(vars);
  return () => apply(saved);
}

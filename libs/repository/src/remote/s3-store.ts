import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { credentialFor, type S3Credential } from './cloud-credentials';
import type { RemoteObject, RemoteStore } from './remote-store';

type S3Sdk = typeof import('@aws-sdk/client-s3');

/**
 * Amazon S3 and S3-compatible stores (`s3://bucket/path`, `s3://host:port/bucket/path`).
 * Credentials come from the SDK's default chain: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
 * AWS_SESSION_TOKEN, then AWS_PROFILE and the shared `~/.aws` files. The region is
 * AWS_DEFAULT_REGION or AWS_REGION, else the profile's, else us-east-1. An entry for the path in
 * TRITON_CLOUD_CREDENTIAL_PATH's file (`key_id`, `secret_key`, `session_token`, `region`, `profile`)
 * takes precedence.
 */
export class S3Store implements RemoteStore {
  private client?: Promise<{ sdk: S3Sdk; client: S3Client }>;
  private credential?: { value: S3Credential | undefined };

  constructor(
    readonly url: string,
    private readonly bucket: string,
    private readonly prefix: string,
    private readonly endpoint: string | undefined,
    private readonly env: NodeJS.ProcessEnv = process.env,
    /** A connection not made, or a socket idle, this long (ms) fails the request: a stalled endpoint cannot stall polling. */
    private readonly timeouts: { connectMs: number; idleMs: number } = { connectMs: 10_000, idleMs: 60_000 },
  ) {}

  private connect(): Promise<{ sdk: S3Sdk; client: S3Client }> {
    this.client ??= (async () => {
      // Required on first use only: a server with local repositories never loads the SDK.
      const sdk = await import('@aws-sdk/client-s3');
      const file = this.fileCredential();
      const region = file?.region || (await this.region(sdk));
      const client = new sdk.S3Client({
        region,
        ...(file?.key_id && file.secret_key
          ? { credentials: { accessKeyId: file.key_id, secretAccessKey: file.secret_key, sessionToken: file.session_token || undefined } }
          : file?.profile
            ? { profile: file.profile }
            : {}),
        ...(this.endpoint ? { endpoint: this.endpoint, forcePathStyle: true } : {}),
        followRegionRedirects: true,
        maxAttempts: 3,
        requestHandler: { connectionTimeout: this.timeouts.connectMs, socketTimeout: this.timeouts.idleMs },
      });
      return { sdk, client };
    })().catch((e: unknown) => {
      this.client = undefined;
      throw e;
    });
    return this.client;
  }

  private async region(sdk: S3Sdk): Promise<string> {
    const fromEnv = this.env.AWS_DEFAULT_REGION || this.env.AWS_REGION;
    if (fromEnv) return fromEnv;
    if (this.endpoint) return 'us-east-1';
    const probe = new sdk.S3Client({});
    try {
      return await probe.config.region();
    } catch {
      return 'us-east-1';
    } finally {
      probe.destroy();
    }
  }

  async list(): Promise<RemoteObject[]> {
    const { sdk, client } = await this.connect();
    const out: RemoteObject[] = [];
    let token: string | undefined;
    do {
      const page = await client.send(
        new sdk.ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix || undefined, ContinuationToken: token }),
      );
      for (const o of page.Contents ?? []) {
        if (!o.Key || !o.Key.startsWith(this.prefix)) continue;
        out.push({ key: o.Key.slice(this.prefix.length), version: o.ETag ?? '', size: o.Size ?? 0 });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out;
  }

  async download(object: RemoteObject, destination: string): Promise<string> {
    const { sdk, client } = await this.connect();
    const r = await client.send(new sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + object.key }));
    if (!r.Body) throw new Error(`empty answer for object '${object.key}'`);
    await pipeline(r.Body as Readable, createWriteStream(destination));
    return r.ETag ?? object.version;
  }

  /** This path's entry in TRITON_CLOUD_CREDENTIAL_PATH's file, when there is one. */
  private fileCredential(): S3Credential | undefined {
    this.credential ??= { value: credentialFor('s3', this.url, this.env) };
    return this.credential.value;
  }

  secrets(): string[] {
    let file: S3Credential | undefined;
    try {
      file = this.fileCredential();
    } catch {
      file = undefined;
    }
    return [this.env.AWS_SECRET_ACCESS_KEY, this.env.AWS_SESSION_TOKEN, file?.secret_key, file?.session_token].filter(
      (s): s is string => !!s,
    );
  }

  close(): void {
    void this.client?.then(({ client }) => client.destroy()).catch(() => undefined);
  }
}

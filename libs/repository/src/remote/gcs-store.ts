import type { Bucket } from '@google-cloud/storage';
import { credentialFor } from './cloud-credentials';
import type { RemoteObject, RemoteStore } from './remote-store';

/**
 * Google Cloud Storage (`gs://bucket/path`). Credentials from the SDK's default chain:
 * GOOGLE_APPLICATION_CREDENTIALS (a JSON key file), else the attached service account.
 * STORAGE_EMULATOR_HOST points the SDK at an emulator. A key file named for the path in
 * TRITON_CLOUD_CREDENTIAL_PATH's file takes precedence.
 */
export class GcsStore implements RemoteStore {
  private bucket?: Promise<Bucket>;

  constructor(
    readonly url: string,
    private readonly bucketName: string,
    private readonly prefix: string,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  private connect(): Promise<Bucket> {
    this.bucket ??= (async () => {
      // Required on first use only: a server with local repositories never loads the SDK.
      const { Storage } = await import('@google-cloud/storage');
      const keyFilename = credentialFor('gs', this.url, this.env);
      // Two quick retries (about 1 s apart): a failing poll is tried again at the next poll anyway.
      return new Storage({ retryOptions: { maxRetries: 2, retryDelayMultiplier: 1.2 }, ...(keyFilename ? { keyFilename } : {}) }).bucket(this.bucketName);
    })().catch((e: unknown) => {
      this.bucket = undefined;
      throw e;
    });
    return this.bucket;
  }

  async list(): Promise<RemoteObject[]> {
    const bucket = await this.connect();
    const [files] = await bucket.getFiles({ prefix: this.prefix || undefined, autoPaginate: true });
    const out: RemoteObject[] = [];
    for (const f of files) {
      if (!f.name.startsWith(this.prefix)) continue;
      const generation = f.metadata.generation ?? f.metadata.etag ?? '';
      out.push({ key: f.name.slice(this.prefix.length), version: String(generation), size: Number(f.metadata.size ?? 0) });
    }
    return out;
  }

  async download(object: RemoteObject, destination: string): Promise<string> {
    const bucket = await this.connect();
    // The listed generation exactly: a newer one is fetched by the next sync.
    const generation = /^[0-9]+$/.test(object.version) ? Number(object.version) : undefined;
    await bucket.file(this.prefix + object.key, generation !== undefined ? { generation } : {}).download({ destination });
    return object.version;
  }

  secrets(): string[] {
    return [];
  }

  close(): void {
    this.bucket = undefined;
  }
}

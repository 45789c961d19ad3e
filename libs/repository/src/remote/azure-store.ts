import type { ContainerClient } from '@azure/storage-blob';
import { credentialFor } from './cloud-credentials';
import type { RemoteObject, RemoteStore } from './remote-store';

/** The account key of a connection string, for scrubbing. */
function connectionStringKey(cs: string): string | undefined {
  return /(?:^|;)\s*AccountKey=([^;]+)/i.exec(cs)?.[1];
}

/**
 * Azure Blob Storage (`as://account/container/path`). Credentials as in Triton: AZURE_STORAGE_ACCOUNT
 * and AZURE_STORAGE_KEY (shared key; without a key the container is read anonymously). A connection
 * string in AZURE_STORAGE_CONNECTION_STRING (e.g. for the Azurite emulator) takes precedence; its
 * account must be the path's. An entry for the path in TRITON_CLOUD_CREDENTIAL_PATH's file
 * (`account_str`, `account_key`) takes precedence over the two variables.
 */
export class AzureStore implements RemoteStore {
  private container?: Promise<ContainerClient>;

  constructor(
    readonly url: string,
    private readonly account: string,
    private readonly containerName: string,
    private readonly prefix: string,
    private readonly env: NodeJS.ProcessEnv = process.env,
    /** A listing not done in this time (ms) fails: a stalled endpoint cannot stall polling. */
    private readonly listTimeoutMs = 120_000,
  ) {}

  private connect(): Promise<ContainerClient> {
    this.container ??= (async () => {
      // Required on first use only: a server with local repositories never loads the SDK.
      const sdk = await import('@azure/storage-blob');
      const pipelineOptions = { retryOptions: { maxTries: 3, retryDelayInMs: 200, maxRetryDelayInMs: 2000 } };
      const authType = this.env.AZURE_STORAGE_AUTH_TYPE;
      if (authType && authType !== 'key') {
        throw new Error(
          `AZURE_STORAGE_AUTH_TYPE=${authType} is not supported: use AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY, or AZURE_STORAGE_CONNECTION_STRING`,
        );
      }
      const cs = this.env.AZURE_STORAGE_CONNECTION_STRING;
      let service;
      if (cs) {
        service = sdk.BlobServiceClient.fromConnectionString(cs, pipelineOptions);
        if (service.accountName !== this.account) {
          throw new Error(
            `the storage account of AZURE_STORAGE_CONNECTION_STRING ('${service.accountName}') is not the repository's ('${this.account}')`,
          );
        }
      } else {
        const file = credentialFor('as', this.url, this.env);
        const key = file?.account_key || this.env.AZURE_STORAGE_KEY;
        const keyAccount = (file?.account_key ? file.account_str : this.env.AZURE_STORAGE_ACCOUNT) || this.account;
        const credential = key ? new sdk.StorageSharedKeyCredential(keyAccount, key) : new sdk.AnonymousCredential();
        service = new sdk.BlobServiceClient(`https://${this.account}.blob.core.windows.net`, credential, pipelineOptions);
      }
      return service.getContainerClient(this.containerName);
    })().catch((e: unknown) => {
      this.container = undefined;
      throw e;
    });
    return this.container;
  }

  async list(): Promise<RemoteObject[]> {
    const container = await this.connect();
    const out: RemoteObject[] = [];
    const abortSignal = AbortSignal.timeout(this.listTimeoutMs);
    for await (const b of container.listBlobsFlat({ prefix: this.prefix || undefined, abortSignal })) {
      if (!b.name.startsWith(this.prefix)) continue;
      out.push({ key: b.name.slice(this.prefix.length), version: b.properties.etag ?? '', size: b.properties.contentLength ?? 0 });
    }
    return out;
  }

  async download(object: RemoteObject, destination: string): Promise<string> {
    const container = await this.connect();
    const r = await container.getBlobClient(this.prefix + object.key).downloadToFile(destination);
    return r.etag ?? object.version;
  }

  secrets(): string[] {
    const cs = this.env.AZURE_STORAGE_CONNECTION_STRING;
    let fileKey: string | undefined;
    try {
      fileKey = credentialFor('as', this.url, this.env)?.account_key;
    } catch {
      fileKey = undefined;
    }
    return [this.env.AZURE_STORAGE_KEY, cs, cs ? connectionStringKey(cs) : undefined, fileKey].filter((s): s is string => !!s);
  }

  close(): void {
    this.container = undefined;
  }
}

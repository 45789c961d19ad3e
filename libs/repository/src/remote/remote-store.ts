/** One object of a cloud repository, its key relative to the repository's folder. */
export interface RemoteObject {
  /** `<model>/<version>/<file>`: the object's key less the repository prefix. A key ending in `/` is a folder marker. */
  key: string;
  /** What changes when the object does: the ETag (S3, Azure) or the generation (GCS). */
  version: string;
  size: number;
}

/**
 * A cloud store adapter: lists a repository folder and downloads its objects. One per vendor
 * (s3-store.ts, gcs-store.ts, azure-store.ts); the sync (cache-sync.ts) knows no vendor.
 */
export interface RemoteStore {
  /** The repository path as given (`s3://…`), for messages. */
  readonly url: string;
  /** Every object under the repository folder. */
  list(): Promise<RemoteObject[]>;
  /** Writes one object to `destination` and returns the version it wrote (the listing's may be stale). */
  download(object: RemoteObject, destination: string): Promise<string>;
  /** Credentials this store may use: removed from every message it produces. */
  secrets(): string[];
  /** Releases sockets. */
  close(): void;
}

/** Removes the given secrets (and their URL-encoded forms) from a message. */
export function scrubSecrets(message: string, secrets: readonly string[]): string {
  let out = message;
  for (const s of secrets) {
    if (s.length < 4) continue;
    for (const form of new Set([s, encodeURIComponent(s)])) out = out.split(form).join('***');
  }
  return out;
}

/** The short reason of an SDK error: its name or code and message, on one line. */
export function sdkErrorReason(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const err = e as Error & { code?: unknown; Code?: unknown; $metadata?: { httpStatusCode?: number }; statusCode?: unknown };
  const code = typeof err.code === 'string' ? err.code : typeof err.Code === 'string' ? err.Code : err.name !== 'Error' ? err.name : '';
  const status = err.$metadata?.httpStatusCode ?? (typeof err.statusCode === 'number' ? err.statusCode : undefined);
  const first = (err.message || '').split('\n')[0].trim();
  const parts = [code, status ? `HTTP ${status}` : ''].filter(Boolean).join(', ');
  if (!first || first === code) return parts || 'unknown error';
  return parts ? `${first} (${parts})` : first;
}

/**
 * Cloud repository paths in Triton's forms (`--model-repository`):
 * - `gs://<bucket>/<path>`
 * - `s3://<bucket>/<path>`, or with an S3-compatible endpoint `s3://<host>:<port>/<bucket>/<path>`
 *   (HTTP; `s3://http://…` and `s3://https://…` choose the scheme)
 * - `as://<account>/<container>/<path>`
 */
export type RemoteLocation =
  | { kind: 's3'; url: string; bucket: string; prefix: string; endpoint?: string }
  | { kind: 'gs'; url: string; bucket: string; prefix: string }
  | { kind: 'as'; url: string; account: string; container: string; prefix: string };

/** True for a path in one of the cloud forms (`s3://`, `gs://`, `as://`). */
export function isRemoteRepository(repository: string): boolean {
  return /^(s3|gs|as):\/\//.test(repository);
}

/** The folder prefix of an object path: no leading slash, a trailing slash unless empty. */
function folderPrefix(parts: readonly string[]): string {
  const p = parts.filter((s) => s.length > 0).join('/');
  return p ? `${p}/` : '';
}

function invalid(url: string, why: string): Error {
  return new Error(`invalid model repository path '${url}': ${why}`);
}

// Triton's S3 endpoint form: s3://(http://|https://|)<host>:<port>/<bucket>/<path>
const S3_ENDPOINT = /^s3:\/\/(https?:\/\/)?([0-9A-Za-z.-]+):([0-9]+)\/(.*)$/;

/** Parses a cloud repository path; throws with the reason when it is malformed. */
export function parseRemoteRepository(url: string): RemoteLocation {
  const scheme = url.slice(0, 2);
  if (scheme === 's3') {
    const m = S3_ENDPOINT.exec(url);
    let endpoint: string | undefined;
    let rest: string;
    if (m) {
      endpoint = `${m[1] ?? 'http://'}${m[2]}:${m[3]}`;
      rest = m[4];
    } else {
      rest = url.slice('s3://'.length);
    }
    const [bucket, ...path] = rest.split('/');
    if (!bucket) throw invalid(url, 'no bucket name');
    return { kind: 's3', url, bucket, prefix: folderPrefix(path), ...(endpoint ? { endpoint } : {}) };
  }
  if (scheme === 'gs') {
    const [bucket, ...path] = url.slice('gs://'.length).split('/');
    if (!bucket) throw invalid(url, 'no bucket name');
    return { kind: 'gs', url, bucket, prefix: folderPrefix(path) };
  }
  if (scheme === 'as') {
    const [account, container, ...path] = url.slice('as://'.length).split('/');
    if (!account) throw invalid(url, 'no storage account name');
    if (!container) throw invalid(url, 'no container name');
    return { kind: 'as', url, account, container, prefix: folderPrefix(path) };
  }
  throw invalid(url, 'not a cloud storage path (s3://, gs:// or as://)');
}

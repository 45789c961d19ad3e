import { readFileSync } from 'node:fs';

/** S3 credentials of one path prefix in TRITON_CLOUD_CREDENTIAL_PATH's file. */
export interface S3Credential {
  key_id?: string;
  secret_key?: string;
  session_token?: string;
  region?: string;
  profile?: string;
}

/** Azure credentials of one path prefix. */
export interface AzureCredential {
  account_str?: string;
  account_key?: string;
}

interface CredentialFile {
  s3?: Record<string, S3Credential>;
  gs?: Record<string, string>;
  as?: Record<string, AzureCredential>;
}

/**
 * Triton's multi-credential file (`TRITON_CLOUD_CREDENTIAL_PATH`, beta in Triton): top-level keys
 * `s3`, `gs`, `as`, each mapping a path prefix (`""` = any path) to credentials; the longest prefix
 * of the repository path wins. Undefined when the variable is not set or no prefix matches: the
 * per-store environment variables apply then.
 */
export function credentialFor<K extends keyof CredentialFile>(
  kind: K,
  url: string,
  env: NodeJS.ProcessEnv = process.env,
): NonNullable<CredentialFile[K]>[string] | undefined {
  const file = env.TRITON_CLOUD_CREDENTIAL_PATH;
  if (!file) return undefined;
  let parsed: CredentialFile;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8')) as CredentialFile;
  } catch (e) {
    // The reason only: the file's contents are secrets.
    const why = e instanceof SyntaxError ? 'not valid JSON' : ((e as NodeJS.ErrnoException).code ?? 'unreadable');
    throw new Error(`failed to read TRITON_CLOUD_CREDENTIAL_PATH '${file}': ${why}`);
  }
  const table = parsed?.[kind];
  if (!table || typeof table !== 'object') return undefined;
  let best: string | undefined;
  for (const prefix of Object.keys(table)) {
    if (url.startsWith(prefix) && (best === undefined || prefix.length > best.length)) best = prefix;
  }
  return best === undefined ? undefined : (table[best] as NonNullable<CredentialFile[K]>[string]);
}

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { credentialFor } from './cloud-credentials';

describe('TRITON_CLOUD_CREDENTIAL_PATH', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'nereid-cred-'));
  const file = path.join(dir, 'cred.json');
  writeFileSync(
    file,
    JSON.stringify({
      s3: {
        '': { key_id: 'default-id', secret_key: 'default-secret' },
        's3://bucket': { key_id: 'bucket-id', secret_key: 'bucket-secret', region: 'eu-west-1' },
        's3://bucket/team-a': { profile: 'team-a' },
      },
      gs: { 'gs://b': '/keys/b.json' },
      as: { 'as://acct/c': { account_str: 'acct', account_key: 'a2V5' } },
    }),
  );
  const env = { TRITON_CLOUD_CREDENTIAL_PATH: file };

  it('picks the longest matching prefix, "" for any path', () => {
    expect(credentialFor('s3', 's3://bucket/team-a/models', env)).toEqual({ profile: 'team-a' });
    expect(credentialFor('s3', 's3://bucket/other', env)).toMatchObject({ key_id: 'bucket-id', region: 'eu-west-1' });
    expect(credentialFor('s3', 's3://elsewhere/x', env)).toMatchObject({ key_id: 'default-id' });
    expect(credentialFor('gs', 'gs://b/models', env)).toBe('/keys/b.json');
    expect(credentialFor('gs', 'gs://other/models', env)).toBeUndefined();
    expect(credentialFor('as', 'as://acct/c/m', env)).toEqual({ account_str: 'acct', account_key: 'a2V5' });
  });

  it('applies only when the variable is set', () => {
    expect(credentialFor('s3', 's3://bucket/x', {})).toBeUndefined();
  });

  it('says why a file cannot be used without showing its contents', () => {
    const bad = path.join(dir, 'bad.json');
    writeFileSync(bad, '{"s3": {"": {"secret_key": "hunter2hunter2"');
    const read = (): unknown => credentialFor('s3', 's3://b', { TRITON_CLOUD_CREDENTIAL_PATH: bad });
    expect(read).toThrow(`failed to read TRITON_CLOUD_CREDENTIAL_PATH '${bad}': not valid JSON`);
    expect(() => credentialFor('s3', 's3://b', { TRITON_CLOUD_CREDENTIAL_PATH: path.join(dir, 'none.json') })).toThrow(/: ENOENT$/);
  });
});

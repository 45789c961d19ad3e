import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { RemoteRepositories } from '@nereid/repository';
import { startS3Emulator, withEnv } from './helpers/cloud-emulators';
import { describeCloudRepository } from './helpers/cloud-repository-suite';
import { MODELS, postJson, startError, startTestServer } from './helpers/server';

// s3rver, a real S3 server from npm, started once for this file.
const { emulator } = describeCloudRepository('S3', () => startS3Emulator('models'));

describe('S3 credentials', () => {
  // s3rver checks the access key id (it does not verify SigV4 signatures): a key it does not know.
  it('refuses unknown credentials and never shows the secret', async () => {
    const secret = 'not-the-secret-key-9f3a1c';
    const restore = withEnv({ AWS_ACCESS_KEY_ID: 'AKIAUNKNOWNKEY', AWS_SECRET_ACCESS_KEY: secret });
    try {
      const err = await startError({ modelRepositories: [emulator().repository('repo')] });
      expect(err?.message).toMatch(/^failed to read model repository 's3:\/\/127\.0\.0\.1:\d+\/models\/repo': .*InvalidAccessKeyId/);
      expect(err?.message).not.toContain(secret);
    } finally {
      restore();
    }
  });
});

describe('TRITON_CLOUD_CREDENTIAL_PATH', () => {
  it('takes the credentials of the longest matching prefix over the AWS variables', async () => {
    const emu = emulator();
    await emu.upload(path.join(MODELS, 'simple'), 'credfile/simple');
    const url = emu.repository('credfile');
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'nereid-cred-')), 'cred.json');
    writeFileSync(
      file,
      JSON.stringify({
        s3: {
          '': { key_id: 'AKIAUNKNOWNKEY', secret_key: 'wrong-secret-for-any-path' },
          [url]: { key_id: 'S3RVER', secret_key: 'S3RVER', region: 'us-east-1' },
        },
      }),
    );
    const restore = withEnv({ TRITON_CLOUD_CREDENTIAL_PATH: file, AWS_ACCESS_KEY_ID: undefined, AWS_SECRET_ACCESS_KEY: undefined });
    try {
      const server = await startTestServer({ modelRepositories: [url] });
      try {
        const r = await postJson(`${server.http}/v2/models/simple/infer`, {
          inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, shape: [1, 16], datatype: 'INT32', data: Array(16).fill(2) })),
        });
        expect(r.status).toBe(200);
        expect(r.body.outputs[0].data).toEqual(Array(16).fill(4));
      } finally {
        await server.close();
      }
      // Another path matches only "": its unknown key is refused, its secret never shown.
      const err = await startError({ modelRepositories: [emu.repository('repo')] });
      expect(err?.message).toMatch(/InvalidAccessKeyId/);
      expect(err?.message).not.toContain('wrong-secret-for-any-path');
    } finally {
      restore();
    }
  });
});

describe('S3 outage in poll mode', () => {
  it('keeps serving what it loaded while the store cannot be read', async () => {
    const own = await startS3Emulator('outage');
    const restore = withEnv(own.env);
    const infer = (http: string): Promise<{ status: number }> =>
      postJson(`${http}/v2/models/simple/infer`, {
        inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, shape: [1, 16], datatype: 'INT32', data: Array(16).fill(1) })),
      });
    let server: Awaited<ReturnType<typeof startTestServer>> | undefined;
    try {
      await own.upload(path.join(MODELS, 'simple'), 'repo/simple');
      server = await startTestServer({ modelRepositories: [own.repository('repo')], modelControlMode: 'poll', repositoryPollSecs: 1 });
      expect((await infer(server.http)).status).toBe(200);
      await own.stop();
      // Two polls or more fail to list the store.
      await new Promise((resolve) => setTimeout(resolve, 2500));
      expect((await infer(server.http)).status).toBe(200);
      const index = await postJson(`${server.http}/v2/repository/index`, {});
      expect(index.status).not.toBe(200);
      expect(JSON.stringify(index.body)).toContain(`failed to read model repository '${own.repository('repo')}'`);
    } finally {
      await server?.close();
      restore();
      await own.stop();
    }
  });
});

describe('S3 credentials from the shared files', () => {
  it('takes the credentials of the profile named by AWS_PROFILE from the shared credentials file', async () => {
    const emu = emulator();
    await emu.put('profiles/m/1/model.txt', 'from a profile');
    const dir = mkdtempSync(path.join(tmpdir(), 'nereid-aws-'));
    writeFileSync(path.join(dir, 'credentials'), '[default]\naws_access_key_id = AKIAUNKNOWNKEY\naws_secret_access_key = nope\n\n[nereid]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n');
    writeFileSync(path.join(dir, 'config'), '[profile nereid]\nregion = us-east-1\n');
    const restore = withEnv({
      AWS_ACCESS_KEY_ID: undefined,
      AWS_SECRET_ACCESS_KEY: undefined,
      AWS_DEFAULT_REGION: undefined,
      AWS_SHARED_CREDENTIALS_FILE: path.join(dir, 'credentials'),
      AWS_CONFIG_FILE: path.join(dir, 'config'),
      AWS_PROFILE: 'nereid',
    });
    const repos = new RemoteRepositories([emu.repository('profiles')]);
    try {
      const [local] = await repos.prepare();
      expect(readFileSync(path.join(local, 'm', '1', 'model.txt'), 'utf8')).toBe('from a profile');
    } finally {
      await repos.close();
      restore();
    }
  });
});

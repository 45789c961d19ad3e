import { startS3Emulator, withEnv } from './helpers/cloud-emulators';
import { describeCloudRepository } from './helpers/cloud-repository-suite';
import { startTestServer } from './helpers/server';

// s3rver, a real S3 server from npm, started once for this file.
const { emulator } = describeCloudRepository('S3', () => startS3Emulator('models'));

describe('S3 credentials', () => {
  // s3rver checks the access key id (it does not verify SigV4 signatures): a key it does not know.
  it('refuses unknown credentials and never shows the secret', async () => {
    const secret = 'not-the-secret-key-9f3a1c';
    const restore = withEnv({ AWS_ACCESS_KEY_ID: 'AKIAUNKNOWNKEY', AWS_SECRET_ACCESS_KEY: secret });
    try {
      const err = await startTestServer({ modelRepositories: [emulator().repository('repo')] }).then(
        async (s) => {
          await s.close();
          return undefined;
        },
        (e: Error) => e,
      );
      expect(err?.message).toMatch(/^failed to read model repository 's3:\/\/127\.0\.0\.1:\d+\/models\/repo': .*InvalidAccessKeyId/);
      expect(err?.message).not.toContain(secret);
    } finally {
      restore();
    }
  });
});

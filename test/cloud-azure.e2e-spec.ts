import { startAzureEmulator, withEnv } from './helpers/cloud-emulators';
import { describeCloudRepository } from './helpers/cloud-repository-suite';
import { startError } from './helpers/server';

// Azurite, Microsoft's Azure Storage emulator from npm, started once for this file.
const { emulator } = describeCloudRepository('Azure', () => startAzureEmulator('models'));

describe('Azure credentials', () => {
  it('refuses a wrong account key and never shows it', async () => {
    const wrongKey = Buffer.from('not-the-account-key-0123456789abcdef').toString('base64');
    const cs = emulator().env.AZURE_STORAGE_CONNECTION_STRING.replace(/AccountKey=[^;]+/, `AccountKey=${wrongKey}`);
    const restore = withEnv({ AZURE_STORAGE_CONNECTION_STRING: cs });
    try {
      const err = await startError({ modelRepositories: [emulator().repository('repo')] });
      expect(err?.message).toMatch(/^failed to read model repository 'as:\/\/devstoreaccount1\/models\/repo': /);
      expect(err?.message).not.toContain(wrongKey);
    } finally {
      restore();
    }
  });

  it('refuses a connection string for another account', async () => {
    const err = await startError({ modelRepositories: ['as://otheraccount/models/repo'] });
    expect(err?.message).toContain(
      "failed to read model repository 'as://otheraccount/models/repo': the storage account of AZURE_STORAGE_CONNECTION_STRING ('devstoreaccount1') is not the repository's ('otheraccount')",
    );
  });
});

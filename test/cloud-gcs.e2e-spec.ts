import { spawnSync } from 'node:child_process';
import { freePort, loopbackPorts, MAIN } from './helpers/built-server';

// No GCS emulator runs here (see the note in test/helpers/cloud-emulators.ts), and
// @google-cloud/storage loads ES modules that Jest's VM cannot: this test runs the built CLI
// (`npm run build` first) and checks only that a gs:// repository goes through the SDK to the
// endpoint it is given (STORAGE_EMULATOR_HOST) and that start-up fails naming the repository.
describe('GCS repository', () => {
  it('fails start-up naming the repository when its endpoint cannot be reached', async () => {
    const closed = await freePort();
    const { args } = await loopbackPorts();
    const r = spawnSync(process.execPath, [MAIN, 'serve', '--model-repository=gs://models/repo', ...args], {
      encoding: 'utf8',
      timeout: 40_000,
      env: { ...process.env, STORAGE_EMULATOR_HOST: `http://127.0.0.1:${closed}`, GOOGLE_APPLICATION_CREDENTIALS: '' },
    });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/failed to read model repository 'gs:\/\/models\/repo': .*ECONNREFUSED/);
  });
});

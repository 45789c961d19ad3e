import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startAzureEmulator, startS3Emulator, useCloudEmulator } from '../../../../test/helpers/cloud-emulators';
import { CacheSync } from './cache-sync';
import { RemoteRepositories, remoteStore } from './remote-repositories';
import { parseRemoteRepository } from './remote-url';

/** Every file under a folder, `relative/path` → text. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string): void => {
    for (const name of readdirSync(path.join(dir, rel))) {
      const r = rel ? `${rel}/${name}` : name;
      if (statSync(path.join(dir, r)).isDirectory()) walk(r);
      else out[r] = readFileSync(path.join(dir, r), 'utf8');
    }
  };
  walk('');
  return out;
}

function newCache(url: string, env: NodeJS.ProcessEnv): { sync: CacheSync; local: string; base: string } {
  const base = mkdtempSync(path.join(tmpdir(), 'nereid-cache-spec-'));
  const local = path.join(base, 'repository');
  const staging = path.join(base, 'staging');
  mkdirSync(local);
  mkdirSync(staging);
  return { sync: new CacheSync(remoteStore(parseRemoteRepository(url), env), local, staging), local, base };
}

/** One suite, run against each emulator: the sync is vendor-neutral, the stores must behave alike. */
describe.each([
  ['S3 (s3rver)', () => startS3Emulator('specs'), 'TRITON_AWS_MOUNT_DIRECTORY'],
  ['Azure (azurite)', () => startAzureEmulator('specs'), 'TRITON_AZURE_MOUNT_DIRECTORY'],
])('cloud repository cache on %s', (_name, start, mountVariable) => {
  const emu = useCloudEmulator(start);

  it('copies the folder, then fetches only what changed and deletes what is gone', async () => {
    await emu().put('repo/m/config.pbtxt', 'name: "m"');
    await emu().put('repo/m/1/model.txt', 'one');
    await emu().put('repo/m/2/model.txt', 'two');
    await emu().put('repo-other/x/1/model.txt', 'not in the repository');
    const { sync, local } = newCache(emu().repository('repo'), emu().env);

    expect(await sync.sync()).toEqual({ downloaded: 3, removed: 0, skipped: [] });
    expect(tree(local)).toEqual({ 'm/config.pbtxt': 'name: "m"', 'm/1/model.txt': 'one', 'm/2/model.txt': 'two' });
    const mtime = statSync(path.join(local, 'm/1/model.txt')).mtimeMs;

    expect(await sync.sync()).toEqual({ downloaded: 0, removed: 0, skipped: [] });
    expect(statSync(path.join(local, 'm/1/model.txt')).mtimeMs).toBe(mtime);

    await emu().put('repo/m/2/model.txt', 'two, changed');
    await emu().remove('repo/m/1/model.txt');
    expect(await sync.sync()).toEqual({ downloaded: 1, removed: 1, skipped: [] });
    expect(tree(local)).toEqual({ 'm/config.pbtxt': 'name: "m"', 'm/2/model.txt': 'two, changed' });
    // The emptied version folder is gone too: the manager sees version 1 removed.
    expect(readdirSync(path.join(local, 'm')).sort()).toEqual(['2', 'config.pbtxt']);
  });

  it("deletes a removed model's folder with the files its backend wrote there", async () => {
    await emu().put('gone/py/config.pbtxt', 'backend: "python"');
    await emu().put('gone/py/1/model.py', 'pass');
    await emu().put('gone/keep/1/model.py', 'pass');
    const { sync, local } = newCache(emu().repository('gone'), emu().env);
    await sync.sync();
    // As python does on import: byte code beside the model, unknown to the store.
    for (const m of ['py', 'keep']) {
      mkdirSync(path.join(local, m, '1', '__pycache__'));
      writeFileSync(path.join(local, m, '1', '__pycache__', 'model.cpython-311.pyc'), 'bytecode');
    }
    await emu().remove('gone/py/config.pbtxt');
    await emu().remove('gone/py/1/model.py');
    expect(await sync.sync()).toEqual({ downloaded: 0, removed: 2, skipped: [] });
    expect(readdirSync(local)).toEqual(['keep']);
    expect(tree(local)).toEqual({ 'keep/1/model.py': 'pass', 'keep/1/__pycache__/model.cpython-311.pyc': 'bytecode' });
  });

  it('skips keys that would leave the cache folder and writes nothing outside it', async () => {
    await emu().put('unsafe/m/1/ok.txt', 'ok');
    await emu().put('unsafe/m\\..\\..\\evil.txt', 'backslashes');
    const { sync, local, base } = newCache(emu().repository('unsafe'), emu().env);
    const report = await sync.sync();
    expect(report.downloaded).toBe(1);
    // S3 keeps the backslashes; Azure reads them as slashes: a '..' segment either way.
    expect(report.skipped).toHaveLength(1);
    expect(report.skipped[0]).toMatch(/^'m.\.\..\.\..evil\.txt': (control character or backslash|path segment '\.\.')$/);
    expect(tree(local)).toEqual({ 'm/1/ok.txt': 'ok' });
    expect(readdirSync(base).sort()).toEqual(['repository', 'staging']);
    expect(readdirSync(path.join(base, 'staging'))).toEqual([]);
  });

  it('names an object it does not copy once, not at every sync', async () => {
    await emu().put('warned/m/1/ok.txt', 'ok');
    await emu().put('warned/m\\..\\x.txt', 'skipped');
    const lines: string[] = [];
    const repos = new RemoteRepositories([emu().repository('warned')], { env: emu().env, log: (level, m) => lines.push(`${level} ${m}`) });
    await repos.prepare();
    await repos.prepare();
    await repos.close();
    const warnings = lines.filter((l) => l.startsWith('warn '));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`model repository '${emu().repository('warned')}': object 'm`);
  });

  it('serves local and cloud repositories side by side, in a mount directory when one is named', async () => {
    await emu().put('mounted/m/1/model.txt', 'mounted');
    const mount = mkdtempSync(path.join(tmpdir(), 'nereid-mount-'));
    const localRepo = mkdtempSync(path.join(tmpdir(), 'nereid-local-'));
    const repos = new RemoteRepositories([localRepo, emu().repository('mounted')], { env: { ...emu().env, [mountVariable]: mount } });
    expect(repos.hasRemote).toBe(true);
    expect(await repos.prepare()).toEqual([localRepo, path.join(mount, '1')]);
    expect(tree(path.join(mount, '1'))).toEqual({ 'm/1/model.txt': 'mounted' });
    await repos.close();
    // The named folder is the user's: the copy stays, the staging folder goes.
    expect(readdirSync(mount)).toEqual(['1']);

    const temp = new RemoteRepositories([emu().repository('mounted')], { env: emu().env });
    const [cache] = await temp.prepare();
    expect(tree(cache)).toEqual({ 'm/1/model.txt': 'mounted' });
    await temp.close();
    expect(existsSync(cache)).toBe(false);
  });

  it('says which repository cannot be read, without credentials', async () => {
    const url = emu().repository('repo').replace(/(specs)/, 'no-such-bucket');
    const { sync } = newCache(url, emu().env);
    const err = await sync.sync().then(() => undefined, (e: Error) => e);
    expect(err?.message).toMatch(new RegExp(`^failed to read model repository '${url.replace(/[/.]/g, '\\$&')}': .+`));
    for (const secret of Object.values(emu().env)) {
      if (secret.length > 8) expect(err?.message).not.toContain(secret);
    }
  });
});

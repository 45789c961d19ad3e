import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { listVersions, readConfigText, scanRepositories } from './local-repository';
import { parseVersionDir, selectVersions } from './versions';

describe('version directories', () => {
  it('parses numeric names like Triton', () => {
    expect(parseVersionDir('1')).toBe(1);
    expect(parseVersionDir('0')).toBe(0);
    expect(parseVersionDir('12')).toBe(12);
    expect(parseVersionDir('01')).toBeUndefined();
    expect(parseVersionDir('v1')).toBeUndefined();
    expect(parseVersionDir('warmup')).toBeUndefined();
    expect(parseVersionDir('configs')).toBeUndefined();
  });

  it('selects versions by policy', () => {
    expect(selectVersions(undefined, [3, 1, 2]).versions).toEqual([3]);
    expect(selectVersions({ latest: { num_versions: 2 } }, [3, 1, 2]).versions).toEqual([2, 3]);
    expect(selectVersions({ all: {} }, [3, 1, 2]).versions).toEqual([1, 2, 3]);
    expect(selectVersions({ specific: { versions: [1, 3, 7] } }, [3, 1, 2])).toEqual({ versions: [1, 3], missing: [7] });
  });
});

describe('local repositories', () => {
  function makeRepo(models: Record<string, string[]>): string {
    const root = mkdtempSync(path.join(tmpdir(), 'nereid-repo-'));
    for (const [name, dirs] of Object.entries(models)) {
      for (const d of dirs) mkdirSync(path.join(root, name, d), { recursive: true });
    }
    writeFileSync(path.join(root, 'README.txt'), 'ignored');
    return root;
  }

  it('finds models, versions and duplicates across repositories', async () => {
    const a = makeRepo({ m1: ['1', '2', '01', 'warmup'], dup: ['1'] });
    const b = makeRepo({ m2: ['3'], dup: ['1'] });
    const scan = await scanRepositories([a, b]);
    expect([...scan.models.keys()].sort()).toEqual(['m1', 'm2']);
    expect([...scan.duplicates]).toEqual(['dup']);
    expect(await listVersions(path.join(a, 'm1'))).toEqual([1, 2]);
  });

  it('skips directories whose names cannot name a model', async () => {
    const root = makeRepo({ good: ['1'], 'forged\nI0101 00:00:00.000000 1 nereid] line': ['1'], 'esc\x1b[2J': ['1'] });
    expect([...(await scanRepositories([root])).models.keys()]).toEqual(['good']);
  });

  it('rejects a missing repository', async () => {
    await expect(scanRepositories(['/nonexistent/nereid'])).rejects.toThrow(/does not exist/);
  });

  it('prefers configs/<name>.pbtxt when a config name is given', async () => {
    const root = makeRepo({ m: ['1', 'configs'] });
    writeFileSync(path.join(root, 'm', 'config.pbtxt'), 'name: "m"');
    writeFileSync(path.join(root, 'm', 'configs', 'alt.pbtxt'), 'name: "alt"');
    expect((await readConfigText(path.join(root, 'm')))?.text).toBe('name: "m"');
    expect((await readConfigText(path.join(root, 'm'), 'alt'))?.text).toBe('name: "alt"');
    expect((await readConfigText(path.join(root, 'm'), 'none'))?.text).toBe('name: "m"');
  });
});
